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
// reply topic when it starts and every replyHeartbeat after, and every
// gateway, every reapInterval, deletes the reply topics (<prefix>gateway.<id>,
// never its own) idle for Config.ReplyTopicIdle: no gateway has run with
// that id for that long. Idle is measured by a clock that starts when
// the topic was made: a topic's newest record (a heartbeat, the first of
// them written when the topic is made, or an answer) must be older than
// the idle time; a topic that holds none (made a moment ago, before its
// first heartbeat; or emptied by retention) must have been seen empty by
// this reaper, pass after pass, for the idle time. So a topic is never
// deleted sooner than the idle time after it was made, whatever the
// order of a peer's start and a reap; a reaper that restarts starts its
// clocks again, which only delays a deletion.
//
// Why delete at all: an instance id that is gone for good (a pod of a
// StatefulSet scaled down, a container whose data dir was lost) leaves
// its topic behind, and the topics pile up. Why deleting is safe: an
// answer owed to a topic that vanished goes to the results topic with
// reply_to_error (the executor forgets the topic and answers the redo
// there), so no executor stalls; the waiter it was owed to stopped
// listening when its gateway went. A gateway whose topic a peer deleted
// while it lived finds it gone within replyTopicCheck, makes it again
// and reads the new one (Client.Reconsume); it is not ready meanwhile.
const (
	replyHeartbeat = 5 * time.Minute
	reapInterval   = 10 * time.Minute
	// replyTopicCheck is how often a gateway checks that its reply topic
	// is the one it reads: a cheap metadata request.
	replyTopicCheck = 30 * time.Second
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
	check := time.NewTicker(replyTopicCheck)
	defer check.Stop()
	reap := time.NewTicker(reapInterval)
	defer reap.Stop()
	for {
		select {
		case <-stop:
			return
		case <-beat.C:
			g.heartbeat()
		case <-check.C:
			g.checkReplyTopic()
		case <-reap.C:
			if g.cfg.ReplyTopicIdle > 0 {
				g.reapOnce(context.Background(), time.Now())
			}
		}
	}
}

// heartbeat writes one heartbeat into the instance's reply topic; a topic
// that is gone is made again and read anew (checkReplyTopic).
func (g *Gateway) heartbeat() {
	ctx, cancel := context.WithTimeout(context.Background(), produceTimeout)
	defer cancel()
	err := g.admCl.ProduceSync(ctx, heartbeatRecord(g.replyTopic)).FirstErr()
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		g.checkReplyTopic()
		return
	}
	if err != nil {
		g.log.Warn("reply topic heartbeat failed", "topic", g.replyTopic, "err", err)
	}
}

// checkReplyTopic makes sure the answers are read from the reply topic
// that exists: a topic that is gone is made again (with a heartbeat, which
// starts its idle clock), and a topic that is not the one the client
// reads (made again, by this gateway or another with its id) is read
// anew. Until that is done the gateway is not ready (Ping), since no
// answer would reach a request.
func (g *Gateway) checkReplyTopic() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	td, err := g.adm.ListTopics(ctx, g.replyTopic)
	if err != nil {
		g.log.Warn("the reply topic could not be checked", "topic", g.replyTopic, "err", err)
		return
	}
	d, ok := td[g.replyTopic]
	if ok && d.Err == nil && d.ID == g.client.ReplyTopicID() {
		return
	}
	g.replyLost.Store(true)
	if !ok || d.Err != nil {
		g.log.Warn("the reply topic is gone (deleted by a peer?); creating it again", "topic", g.replyTopic)
		g.admCl.PurgeTopicsFromClient(g.replyTopic) // its metadata names the topic that is gone
		if err := g.makeReplyTopic(ctx); err != nil {
			g.log.Error("the reply topic could not be made again; not ready", "topic", g.replyTopic, "err", err)
			return
		}
	}
	if err := g.client.Reconsume(ctx); err != nil {
		g.log.Error("the new reply topic could not be read; not ready", "topic", g.replyTopic, "err", err)
		return
	}
	g.log.Info("reading the reply topic anew", "topic", g.replyTopic)
	g.replyLost.Store(false)
}

// makeReplyTopic creates the reply topic if it is missing and writes a
// heartbeat into it at once: the topic's idle clock starts when it is
// made, so no peer's reaper takes it for a topic gone idle.
func (g *Gateway) makeReplyTopic(ctx context.Context) error {
	if err := ensureReplyTopic(ctx, g.adm, g.replyTopic); err != nil {
		return err
	}
	if err := g.admCl.ProduceSync(ctx, heartbeatRecord(g.replyTopic)).FirstErr(); err != nil {
		return fmt.Errorf("gateway: heartbeat into reply topic %s: %w", g.replyTopic, err)
	}
	return nil
}

func heartbeatRecord(topic string) *kgo.Record {
	return &kgo.Record{Topic: topic, Headers: []kgo.RecordHeader{{Key: heartbeatHeader}}}
}

// reapOnce deletes the reply topics of other instances idle since before
// now - ReplyTopicIdle, and returns their names. Called from
// keepReplyTopic's goroutine only (it owns g.reaper).
func (g *Gateway) reapOnce(ctx context.Context, now time.Time) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	idle, err := g.idleReplyTopics(ctx, now.Add(-g.cfg.ReplyTopicIdle), now)
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
// record is older than before, and those this reaper has seen hold none
// since before.
func (g *Gateway) idleReplyTopics(ctx context.Context, before time.Time, now time.Time) ([]string, error) {
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
	emptySince := map[string]time.Time{} // topics gone since the last pass are forgotten
	for _, topic := range candidates {
		o, ok := newest.Lookup(topic, 0)
		switch {
		case !ok || o.Err != nil: // unknown now: looked at again next time
		case o.Offset < 0: // empty: idle once seen empty for the idle time
			since, seen := g.reaper.emptySince[topic]
			if !seen {
				since = now
			}
			emptySince[topic] = since
			if since.Before(before) {
				idle = append(idle, topic)
			}
		case o.Timestamp < before.UnixMilli():
			idle = append(idle, topic)
		}
	}
	g.reaper.emptySince = emptySince
	return idle, nil
}
