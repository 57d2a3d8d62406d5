package topicadmin

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
	"github.com/atmostonce/toolexec/topics"
)

// A broker that does not list the new meta topic's partition yet, or
// answers it with a retriable error, delays RoutingPartitions instead of
// failing it: the member would exit at its start (seen in CI).
func TestRoutingPartitionsWaitsForTheMetaPartition(t *testing.T) {
	n := topics.NamesWithPrefix("lay.")
	for _, tc := range []struct {
		name  string
		reply func(*kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse
	}{
		{"partition left out", func(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
			resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
			resp.Version = req.Version
			return resp // no topics at all
		}},
		{"unknown topic or partition", func(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
			return kfakeresp.ListOffsetsError(req, kfakeresp.All, kerr.UnknownTopicOrPartition)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, n.Meta))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var refused atomic.Int32
			c.ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				if refused.Load() >= 3 {
					return nil, nil, false
				}
				refused.Add(1)
				return tc.reply(r.(*kmsg.ListOffsetsRequest)), nil, true
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got, err := RoutingPartitions(ctx, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, n, 6)
			if err != nil {
				t.Fatalf("RoutingPartitions: %v", err)
			}
			if got != 6 || refused.Load() != 3 {
				t.Fatalf("got %d partitions after %d refusals, want 6 after 3", got, refused.Load())
			}
			// Recorded: a second member reads it back, whatever it found.
			if again, err := RoutingPartitions(ctx, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, n, 9); err != nil || again != 6 {
				t.Fatalf("second read: %d, %v; want 6", again, err)
			}
		})
	}
}

// A non-retriable error ends at once.
func TestRoutingPartitionsFailsOnAFatalMetaError(t *testing.T) {
	n := topics.NamesWithPrefix("lay.")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, n.Meta))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return kfakeresp.ListOffsetsError(r.(*kmsg.ListOffsetsRequest), kfakeresp.All, kerr.TopicAuthorizationFailed), nil, true
	})
	start := time.Now()
	_, err = RoutingPartitions(context.Background(), []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, n, 6)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("RoutingPartitions = %v after %v, want an authorization error at once", err, time.Since(start))
	}
}
