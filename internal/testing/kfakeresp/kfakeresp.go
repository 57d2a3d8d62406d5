// Package kfakeresp builds broker answers for tests that intercept a
// request with kfake's request control (Cluster.ControlKey) and answer it
// with an error the in-process broker would not give on its own, and
// interposes on a kfake cluster's connections (Interposer) to give the two
// answers kfake's Fault API cannot: a request applied and answered with an
// error, and a request applied whose answer is lost.
package kfakeresp

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsetsError answers the partitions of every topic req names for
// which refused is true with e, and the others with offset 0.
func ListOffsetsError(req *kmsg.ListOffsetsRequest, refused func(partition int32) bool, e *kerr.Error) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Version = req.Version
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if refused(rp.Partition) {
				sp.ErrorCode = e.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// All refuses every partition.
func All(int32) bool { return true }
