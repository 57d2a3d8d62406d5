package executor

import (
	"context"
	"time"

	"github.com/atmostonce/toolexec/kafkaretry"
	"github.com/atmostonce/toolexec/topicadmin"
)

// checkDurability reads what the cluster would do with this member's
// writes (replication, min ISR, unclean election, the transaction and
// offsets logs) and refuses a cluster of more than one broker weaker than
// topicadmin.Production, unless Config.AllowWeakDurability
// (topicadmin/durability.go says why).
func (e *Executor) checkDurability(ctx context.Context) error {
	var d topicadmin.Durability
	err := kafkaretry.Through(ctx, e.cfg.Logger, e.cfg.BrokerOutage, "durability check at start", nil, func() (err error) {
		d, err = topicadmin.ReadDurability(ctx, e.adm, e.ourTopics()...)
		return err
	})
	if err != nil {
		return err
	}
	return topicadmin.StartDurability(d, topicadmin.Production, e.cfg.AllowWeakDurability, e.m.Durability, e.cfg.Logger)
}

// ourTopics are the topics whose durability this member depends on: the
// five of the protocol and the routing record's.
func (e *Executor) ourTopics() []string {
	n := e.cfg.Names
	if n.Meta == "" {
		return n.All()
	}
	return append(n.All(), n.Meta)
}

// watchDurability refreshes the durability gauges every
// durabilityWatchInterval until ctx ends: a partition whose in-sync
// replicas fall below its min ISR stops every transaction that writes to
// it, and the alert on it comes from this member's own metadata, so that
// no separate exporter is needed. A failed read is skipped (the next one
// tries again); the gauges keep the last values read.
func (e *Executor) watchDurability(ctx context.Context) {
	t := time.NewTicker(durabilityWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, durabilityWatchInterval)
		d, err := topicadmin.ReadDurability(rctx, e.adm, e.ourTopics()...)
		cancel()
		if err != nil {
			e.cfg.Logger.Debug("durability watch: read failed", "err", err)
			continue
		}
		e.m.Durability.Set(d, topicadmin.Production)
	}
}
