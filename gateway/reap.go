package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The life of reply topics. Every gateway writes a heartbeat into its own
// reply topic every replyHeartbeat, and every gateway, every reapInterval,
// deletes the reply topics (<prefix>gateway.<id>, never its own) whose
// newest record is older than Config.ReplyTopicIdle, or that hold none:
// no gateway has run with that id for that long. Why delete at all: an
// instance id that is gone for good (a pod of a StatefulSet scaled down,
// a container whose data dir was lost) leaves its topic behind, and the
// topics pile up. Why deleting is safe now: an answer owed to a topic
// that vanished goes to the results topic with reply_to_error (the
// executor forgets the topic and answers the redo there), so no executor
// stalls; the waiter it was owed to stopped listening when its gateway
// went. A gateway that starts again with the id creates its topic anew;
// one whose topic a peer deleted while it lived (its heartbeats failed
// for ReplyTopicIdle) creates it again at its next heartbeat.
const (
	replyHeartbeat = 5 * time.Minute
	reapInterval   = 10 * time.Minute
	// DefaultReplyTopicIdle is Config.ReplyTopicIdle's default: the reply
	// topics' retention, so an idle topic is also an empty one.
	DefaultReplyTopicIdle = replyRetention
	// heartbeatHeader marks a heartbeat record; its value is empty, which
	// no answer is, so readers of answers skip it.
	heartbeatHeader = "toolexec-heartbeat"
)

// keepReplyTopic runs until stop: the heartbeat, and the reaper unless
// ReplyTopicIdle is negative.
func (g *Gateway) keepReplyTopic(stop <-chan struct{}) {
	beat := time.NewTicker(replyHeartbeat)
	defer beat.Stop()
	reap := time.NewTicker(reapInterval)
	defer reap.Stop()
	for {
		select {
		case <-stop:
			return
		case <-beat.C:
			g.heartbeat()
		case <-reap.C:
			if g.cfg.ReplyTopicIdle > 0 {
				g.reapOnce(context.Background(), time.Now())
			}
		}
	}
}

// heartbeat writes one heartbeat into the instance's reply topic, and
// creates the topic again if a peer deleted it.
func (g *Gateway) heartbeat() {
	ctx, cancel := context.WithTimeout(context.Background(), produceTimeout)
	defer cancel()
	err := g.admCl.ProduceSync(ctx, heartbeatRecord(g.replyTopic)).FirstErr()
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		g.log.Warn("the reply topic is gone; creating it again", "topic", g.replyTopic)
		err = ensureReplyTopic(ctx, g.adm, g.replyTopic)
	}
	if err != nil {
		g.log.Warn("reply topic heartbeat failed", "topic", g.replyTopic, "err", err)
	}
}

func heartbeatRecord(topic string) *kgo.Record {
	return &kgo.Record{Topic: topic, Headers: []kgo.RecordHeader{{Key: heartbeatHeader}}}
}

// reapOnce deletes the reply topics of other instances idle since before
// now - ReplyTopicIdle, and returns their names.
func (g *Gateway) reapOnce(ctx context.Context, now time.Time) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	idle, err := g.idleReplyTopics(ctx, now.Add(-g.cfg.ReplyTopicIdle))
	if err != nil {
		g.log.Warn("reply topics not reaped", "err", err)
		return nil
	}
	var deleted []string
	for _, topic := range idle {
		if _, err := g.adm.DeleteTopic(ctx, topic); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			g.log.Warn("reply topic of a gone instance not deleted", "topic", topic, "err", err)
			continue
		}
		g.log.Info("deleted the reply topic of an instance gone since before the idle time", "topic", topic, "idle", g.cfg.ReplyTopicIdle)
		deleted = append(deleted, topic)
	}
	return deleted
}

// idleReplyTopics lists the other instances' reply topics whose newest
// record is older than before, or that hold none.
func (g *Gateway) idleReplyTopics(ctx context.Context, before time.Time) ([]string, error) {
	td, err := g.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var candidates []string
	prefix := ReplyTopic(g.cfg.Prefix, "")
	for name := range td {
		if id, ok := strings.CutPrefix(name, prefix); ok && ValidInstanceID(id) && name != g.replyTopic {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	newest, err := g.adm.ListMaxTimestampOffsets(ctx, candidates...)
	if err != nil {
		return nil, fmt.Errorf("newest records of the reply topics: %w", err)
	}
	var idle []string
	for _, topic := range candidates {
		o, ok := newest.Lookup(topic, 0)
		if ok && o.Err == nil && (o.Offset < 0 || o.Timestamp < before.UnixMilli()) {
			idle = append(idle, topic)
		} // else unknown now: looked at again next time
	}
	return idle, nil
}
