package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/topics"
)

// ErrIncompatible is wrapped when existing topics break an assumption the
// protocol depends on. Start-up must stop: running would break routing or
// lose the crash-window fences.
var ErrIncompatible = errors.New("topicadmin: existing topics are incompatible")

// Settings say how to create the topics and what to require of them.
type Settings struct {
	Partitions        int32 // for the co-partitioned topics; default 12
	ReplicationFactor int16 // default -1 (the broker's default)
	// MinInsyncReplicas is set on the topics created; 0 leaves the
	// broker's default.
	MinInsyncReplicas int
	// MinEventRetention is the shortest retention.ms the event log may
	// have: a key's started fence must outlive its tool's retention and
	// pending TTL, or a restore would forget it. Ensure adds a margin.
	MinEventRetention time.Duration
}

// Layout is what Ensure found or made.
type Layout struct {
	Partitions           int32 // of intents, control and events
	ResultPartitions     int32
	DeadLetterPartitions int32
	EventRetention       time.Duration // the event log's retention.ms; 0 when unlimited
}

// Ensure creates the missing topics and checks the existing ones. It
// refuses (ErrIncompatible) when the co-partitioned topics differ in
// partition count, when the event log is compacted, or when its retention
// is shorter than MinEventRetention.
func Ensure(ctx context.Context, adm *kadm.Client, n topics.Names, s Settings) (Layout, error) {
	if s.Partitions <= 0 {
		s.Partitions = 12
	}
	if s.ReplicationFactor == 0 {
		s.ReplicationFactor = -1
	}
	if err := createMissing(ctx, adm, n, s); err != nil {
		return Layout{}, err
	}
	if n.Meta != "" {
		if err := ensureMeta(ctx, adm, n, s); err != nil {
			return Layout{}, err
		}
	}
	return check(ctx, adm, n, s)
}

func topicConfigs(n topics.Names, s Settings, topic string) map[string]*string {
	cfg := map[string]*string{"retention.ms": kadm.StringPtr(strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10))}
	switch topic {
	case n.Events:
		ret := max(7*24*time.Hour, s.MinEventRetention+24*time.Hour)
		cfg["retention.ms"], cfg["cleanup.policy"] = kadm.StringPtr(strconv.FormatInt(ret.Milliseconds(), 10)), kadm.StringPtr("delete")
	case n.DeadLetter:
		cfg["retention.ms"] = kadm.StringPtr(strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10))
	}
	if s.MinInsyncReplicas > 0 {
		cfg["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(s.MinInsyncReplicas))
	}
	return cfg
}

// createMissing creates every topic and ignores TOPIC_ALREADY_EXISTS.
// Why not list first and create the missing ones: kadm serves listings
// from the client's metadata cache, so a topic seen missing just before
// its creation would stay "missing" for the cache's minimum age.
//
// A principal that may not create topics (a least-privilege executor on
// a secured cluster) is answered TOPIC_AUTHORIZATION_FAILED whether the
// topic exists or not: the topics must then exist already, and a missing
// one is ErrNotCreated.
func createMissing(ctx context.Context, adm *kadm.Client, n topics.Names, s Settings) error {
	var refused []string
	for _, t := range n.All() {
		_, err := adm.CreateTopic(ctx, s.Partitions, s.ReplicationFactor, topicConfigs(n, s, t), t)
		switch {
		case err == nil, errors.Is(err, kerr.TopicAlreadyExists):
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			refused = append(refused, t)
		default:
			return fmt.Errorf("topicadmin: create %s: %w", t, err)
		}
	}
	if len(refused) > 0 {
		return mustExist(ctx, adm, refused)
	}
	return waitVisible(ctx, adm, n)
}

// ErrNotCreated: a topic is missing and this principal may not create it.
var ErrNotCreated = errors.New("topicadmin: missing, and not allowed to create it")

func mustExist(ctx context.Context, adm *kadm.Client, names []string) error {
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("topicadmin: list: %w", err)
	}
	for _, t := range names {
		if d, ok := td[t]; !ok || d.Err != nil || len(d.Partitions) == 0 {
			return fmt.Errorf("%w: %s (create the topics with a principal that may: executor topics --kafka-config admin.properties)", ErrNotCreated, t)
		}
	}
	return nil
}

// waitVisible waits until metadata shows every topic with its partitions:
// a fresh topic is not always visible to the next request.
func waitVisible(ctx context.Context, adm *kadm.Client, n topics.Names) error {
	for i := 0; ; i++ {
		td, err := adm.ListTopics(ctx, n.All()...)
		if err == nil && allVisible(td, n) {
			return nil
		}
		if i >= 100 {
			return fmt.Errorf("topicadmin: created topics did not become visible: %v", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allVisible(td kadm.TopicDetails, n topics.Names) bool { return complete(td, n) == nil }

func check(ctx context.Context, adm *kadm.Client, n topics.Names, s Settings) (Layout, error) {
	td, err := adm.ListTopics(ctx, n.All()...)
	if err != nil {
		return Layout{}, fmt.Errorf("topicadmin: list: %w", err)
	}
	if err := complete(td, n); err != nil {
		return Layout{}, err
	}
	l := Layout{
		Partitions:           int32(len(td[n.Intents].Partitions)),
		ResultPartitions:     int32(len(td[n.Results].Partitions)),
		DeadLetterPartitions: int32(len(td[n.DeadLetter].Partitions)),
	}
	for _, t := range n.CoPartitioned() {
		if got := int32(len(td[t].Partitions)); got != l.Partitions {
			return l, fmt.Errorf("%w: %s has %d partitions but %s has %d; intents, control and events must be co-partitioned", ErrIncompatible, t, got, n.Intents, l.Partitions)
		}
	}
	l.EventRetention, err = checkEventConfig(ctx, adm, n, s)
	return l, err
}

// complete refuses a listing that lacks a topic or its partitions.
//
// Why: a metadata answer can carry a topic with an error and no
// partitions while its leaders move (a broker killed on a cluster). Taken
// as it came, the layout said the results topic had no partitions, and the
// executor panicked at its first answer (wire.Partition with none). The
// error is retriable (kerr's, or UNKNOWN_TOPIC_OR_PARTITION), so the
// start waits it out.
func complete(td kadm.TopicDetails, n topics.Names) error {
	for _, t := range n.All() {
		d, ok := td[t]
		switch {
		case ok && d.Err != nil:
			return fmt.Errorf("topicadmin: %s listed without its partitions: %w", t, d.Err)
		case !ok || len(d.Partitions) == 0:
			return fmt.Errorf("topicadmin: %s listed without its partitions: %w", t, kerr.UnknownTopicOrPartition)
		}
	}
	return nil
}

// checkEventConfig checks the event log's settings and returns its
// retention (0: unlimited).
func checkEventConfig(ctx context.Context, adm *kadm.Client, n topics.Names, s Settings) (time.Duration, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, n.Events)
	if err != nil {
		return 0, fmt.Errorf("topicadmin: describe %s: %w", n.Events, err)
	}
	rc, err := rcs.On(n.Events, nil)
	if err != nil {
		return 0, fmt.Errorf("topicadmin: describe %s: %w", n.Events, err)
	}
	var retention time.Duration
	for _, c := range rc.Configs {
		if c.Value == nil {
			continue
		}
		if err := checkEventSetting(n, s, c.Key, *c.Value); err != nil {
			return 0, err
		}
		if ms, err := strconv.ParseInt(*c.Value, 10, 64); c.Key == "retention.ms" && err == nil && ms > 0 {
			retention = time.Duration(ms) * time.Millisecond
		}
	}
	return retention, nil
}

func checkEventSetting(n topics.Names, s Settings, key, value string) error {
	switch key {
	case "cleanup.policy":
		if value != "delete" {
			return fmt.Errorf("%w: %s has cleanup.policy=%s; the event log must not be compacted, every event of a key is needed to fold it", ErrIncompatible, n.Events, value)
		}
	case "retention.ms":
		ms, err := strconv.ParseInt(value, 10, 64)
		if err == nil && ms >= 0 && time.Duration(ms)*time.Millisecond < s.MinEventRetention {
			return fmt.Errorf("%w: %s has retention.ms=%d, shorter than the %s the configured tools need (largest retention plus pending TTL)", ErrIncompatible, n.Events, ms, s.MinEventRetention)
		}
	}
	return nil
}
