package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/cli"
)

// repairProbeTopic names no topic: a marker for it cannot be written, so
// asking costs nothing. The broker checks ClusterAction before it looks
// at the partitions.
const repairProbeTopic = "toolexec.repair-probe.no-such-topic"

// repairProbeTimeout bounds the question at start.
const repairProbeTimeout = 15 * time.Second

// watchRepairAuthorization asks once at start whether this member may
// close hanging transactions (ClusterAction, docs/SECURITY.md) and
// publishes the answer as toolexec_executor_hanging_repair_authorized:
// 1 yes, 0 no (ToolexecExecutorCannotRepairHangingTransactions alerts),
// -1 unknown (the broker did not answer).
func watchRepairAuthorization(ctx context.Context, conn *cli.Conn, reg prometheus.Registerer, log *slog.Logger) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolexec", Subsystem: "executor", Name: "hanging_repair_authorized",
		Help: "Whether this member may close hanging transactions (ClusterAction): 1 yes, 0 no, -1 unknown. Asked once at start."})
	reg.MustRegister(g)
	ok, err := repairAuthorized(ctx, conn)
	switch {
	case err != nil:
		g.Set(-1)
		log.Warn("could not ask whether this member may repair hanging transactions", "err", err)
	case ok:
		g.Set(1)
	default:
		g.Set(0)
		log.Warn("this member lacks ClusterAction: it cannot close hanging transactions, and alerts when it finds one (docs/SECURITY.md)")
	}
}

// repairAuthorized sends WriteTxnMarkers for a partition of a topic that
// does not exist to one broker: CLUSTER_AUTHORIZATION_FAILED means no
// ClusterAction; any other answer (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER)
// means the request was authorized and nothing was written.
func repairAuthorized(ctx context.Context, conn *cli.Conn) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, repairProbeTimeout)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(conn.Seeds...)}, conn.Opts...)...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = 0, 0
	t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	t.Topic, t.Partitions = repairProbeTopic, []int32{0}
	m.Topics = append(m.Topics, t)
	req.Markers = append(req.Markers, m)
	var last error
	for _, b := range cl.SeedBrokers() {
		resp, err := b.Request(ctx, req)
		if err != nil {
			last = err
			continue
		}
		return !errors.Is(firstMarkerErr(resp.(*kmsg.WriteTxnMarkersResponse)), kerr.ClusterAuthorizationFailed), nil
	}
	return false, fmt.Errorf("no broker answered: %w", last)
}

func firstMarkerErr(resp *kmsg.WriteTxnMarkersResponse) error {
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
