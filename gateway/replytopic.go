package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// replyRetention is the retention of a reply topic. Why an hour: an
// answer matters only while a request waits for it (at most MaxWait); a
// short retention keeps the topic of an instance that is gone nearly
// empty. Why not minutes: a broker's retention check runs every 5 minutes
// by default anyway.
const replyRetention = time.Hour

// replyTopicWait bounds how long a created topic may take to show in
// metadata.
const replyTopicWait = 10 * time.Second

// ensureReplyTopic creates the instance's reply topic (one partition) if
// it is missing and waits until metadata shows it: the executor answers a
// reply_to naming a topic it cannot see on the results topic instead.
//
// A restarted instance with the same id reuses its topic. The gateway
// does not delete its own topic on a clean stop (a restart would only
// make it again); the reply topics of instances gone for longer than
// Config.ReplyTopicIdle are deleted by the other gateways (reap.go).
func ensureReplyTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	cfg := map[string]*string{
		"retention.ms":   kadm.StringPtr(strconv.FormatInt(replyRetention.Milliseconds(), 10)),
		"cleanup.policy": kadm.StringPtr("delete"),
	}
	_, err := adm.CreateTopic(ctx, 1, -1, cfg, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("gateway: create reply topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(replyTopicWait)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if d, ok := td[topic]; err == nil && ok && d.Err == nil && len(d.Partitions) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gateway: reply topic %s not visible after %s: %v", topic, replyTopicWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
