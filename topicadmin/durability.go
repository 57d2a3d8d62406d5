package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/kafkaretry"
)

// The durability the at-most-once promise depends on.
//
// A call is made only after its started event is committed. That event is
// only as durable as the transaction that wrote it: on a replicated
// cluster, a commit acknowledged by one replica that then dies, or a
// replica that was out of sync made leader, loses the event, and the next
// owner calls again. So a member checks at start what the cluster would
// do with its writes, and refuses a cluster that could lose them (see
// README.md, "Production", and docs/DESIGN.md, "Durability").

// Requirement is what a cluster of more than one broker must give every
// topic of ours and the transaction and offsets logs.
type Requirement struct {
	ReplicationFactor int // at least; Production: 3
	MinInsyncReplicas int // at least; Production: 2
}

// Production is the requirement of a production cluster: three replicas,
// a write acknowledged by two of them at least, never an out-of-sync
// replica made leader (unclean election is always refused).
var Production = Requirement{ReplicationFactor: 3, MinInsyncReplicas: 2}

// The internal topics whose durability the promise shares: the
// transaction log (the commit decision of every transaction) and the
// offsets log (the consumed offsets committed with it).
const (
	TransactionLog = "__transaction_state"
	OffsetsLog     = "__consumer_offsets"
)

// TopicDurability is what one topic was found with.
type TopicDurability struct {
	Topic             string
	ReplicationFactor int // the smallest replica count over its partitions
	MinInsyncReplicas int // 0 when not read (an internal topic: see Durability)
	UncleanElection   bool
	// UnderMinISR counts the partitions whose in-sync replicas are fewer
	// than MinInsyncReplicas now: a transaction writing there fails
	// (NOT_ENOUGH_REPLICAS) until a replica catches up.
	UnderMinISR int
	// UnderReplicated counts the partitions with a replica out of sync.
	UnderReplicated int
}

// Durability is what ReadDurability found.
type Durability struct {
	Brokers int
	Topics  []TopicDurability // ours, in the order asked
	// Internal holds the transaction and offsets logs that exist; a log
	// not created yet will be created with the brokers' settings below.
	Internal []TopicDurability
	// The brokers' settings, the weakest over all brokers; read only on a
	// cluster of more than one broker.
	UncleanElection       bool
	TxnLogReplication     int
	TxnLogMinISR          int
	OffsetsLogReplication int
	brokerSettingsRead    bool
	// Unreadable names what could not be read, with why (typically a
	// missing ACL: DescribeConfigs on the cluster or the topic).
	Unreadable []string
}

// Single reports a single-broker cluster: development, where replication
// cannot be had and is not required.
func (d Durability) Single() bool { return d.Brokers <= 1 }

// Weaknesses names each setting weaker than r, one per entry, naming the
// setting and the value found ("tool.events: replication factor 1, need
// at least 3"). On a single broker only the topics' own settings were
// read.
func (d Durability) Weaknesses(r Requirement) []string {
	var w []string
	for _, t := range d.Topics {
		w = append(w, t.weaknesses(r)...)
	}
	for _, t := range d.Internal {
		if t.ReplicationFactor < r.ReplicationFactor {
			w = append(w, fmt.Sprintf("%s: replication factor %d, need at least %d (it was created with it: reassign its partitions)", t.Topic, t.ReplicationFactor, r.ReplicationFactor))
		}
	}
	w = append(w, d.brokerWeaknesses(r)...)
	for _, u := range d.Unreadable {
		w = append(w, "could not read "+u)
	}
	return w
}

func (t TopicDurability) weaknesses(r Requirement) []string {
	var w []string
	if t.ReplicationFactor < r.ReplicationFactor {
		w = append(w, fmt.Sprintf("%s: replication factor %d, need at least %d", t.Topic, t.ReplicationFactor, r.ReplicationFactor))
	}
	if t.MinInsyncReplicas < r.MinInsyncReplicas {
		w = append(w, fmt.Sprintf("%s: min.insync.replicas=%d, need at least %d", t.Topic, t.MinInsyncReplicas, r.MinInsyncReplicas))
	}
	if t.UncleanElection {
		w = append(w, fmt.Sprintf("%s: unclean.leader.election.enable=true, need false", t.Topic))
	}
	return w
}

func (d Durability) brokerWeaknesses(r Requirement) []string {
	if !d.brokerSettingsRead {
		return nil
	}
	var w []string
	if d.UncleanElection {
		w = append(w, "broker: unclean.leader.election.enable=true, need false")
	}
	if d.TxnLogReplication < r.ReplicationFactor {
		w = append(w, fmt.Sprintf("broker: transaction.state.log.replication.factor=%d, need at least %d", d.TxnLogReplication, r.ReplicationFactor))
	}
	if d.TxnLogMinISR < r.MinInsyncReplicas {
		w = append(w, fmt.Sprintf("broker: transaction.state.log.min.isr=%d, need at least %d", d.TxnLogMinISR, r.MinInsyncReplicas))
	}
	if d.OffsetsLogReplication < r.ReplicationFactor {
		w = append(w, fmt.Sprintf("broker: offsets.topic.replication.factor=%d, need at least %d", d.OffsetsLogReplication, r.ReplicationFactor))
	}
	return w
}

// ErrWeakDurability is wrapped when a cluster of more than one broker is
// weaker than the requirement and no override was given.
var ErrWeakDurability = errors.New("topicadmin: the cluster could lose a committed transaction")

// CheckDurability refuses d when a cluster of more than one broker is
// weaker than r, unless allowWeak: the error names every weak setting and
// the override. A single broker passes (development).
func CheckDurability(d Durability, r Requirement, allowWeak bool) error {
	if d.Single() {
		return nil
	}
	w := d.Weaknesses(r)
	if len(w) == 0 || allowWeak {
		return nil
	}
	return fmt.Errorf("%w: %d setting(s) weaker than replication factor %d, min.insync.replicas %d, no unclean leader election: %s (fix them, or start with --allow-weak-durability to run anyway, logged and exported as a metric)",
		ErrWeakDurability, len(w), r.ReplicationFactor, r.MinInsyncReplicas, strings.Join(w, "; "))
}

// ReadDurability reads the brokers, the replication and the settings of
// ours (its topics must exist) and, on a cluster of more than one broker,
// the brokers' own settings and the internal logs'. What it may not read
// (authorization) it names in Unreadable; other errors end it.
func ReadDurability(ctx context.Context, adm *kadm.Client, ours ...string) (Durability, error) {
	md, err := metadataOf(ctx, adm, ours)
	if err != nil {
		return Durability{}, err
	}
	d := Durability{Brokers: len(md.Brokers)}
	for _, t := range ours {
		d.Topics = append(d.Topics, replicationOf(md.Topics[t]))
	}
	if err := d.readTopicConfigs(ctx, adm, ours); err != nil {
		return d, err
	}
	for i := range d.Topics {
		d.Topics[i].UnderMinISR = underMinISR(md.Topics[ours[i]], d.Topics[i].MinInsyncReplicas)
	}
	if d.Single() {
		return d, nil
	}
	if err := d.readInternal(ctx, adm); err != nil {
		return d, err
	}
	return d, d.readBrokerSettings(ctx, adm, md.Brokers.NodeIDs())
}

// metadataOf reads the brokers and ours, waiting (up to metadataWait)
// while a topic is not listed yet or answers a retriable error: on a
// cluster, a topic created a moment ago is not known to every broker at
// once.
func metadataOf(ctx context.Context, adm *kadm.Client, ours []string) (kadm.Metadata, error) {
	deadline := time.Now().Add(metadataWait)
	for {
		md, err := adm.Metadata(ctx, ours...)
		if err != nil {
			return md, fmt.Errorf("topicadmin: metadata: %w", err)
		}
		err = topicsListed(md, ours)
		if err == nil || !kafkaretry.Retriable(err) || time.Now().After(deadline) {
			return md, err
		}
		select {
		case <-ctx.Done():
			return md, err
		case <-time.After(metadataRetry):
		}
	}
}

// The bound of metadataOf's wait, and its pause between asks.
const (
	metadataWait  = 30 * time.Second
	metadataRetry = 200 * time.Millisecond
)

// topicsListed is the first error of a topic of ours in md.
func topicsListed(md kadm.Metadata, ours []string) error {
	for _, t := range ours {
		td, ok := md.Topics[t]
		switch {
		case !ok:
			return fmt.Errorf("topicadmin: metadata of %s: %w", t, kerr.UnknownTopicOrPartition)
		case td.Err != nil:
			return fmt.Errorf("topicadmin: metadata of %s: %w", t, td.Err)
		}
	}
	return nil
}

// replicationOf counts a topic's replicas and its partitions out of sync
// (against min ISR later: the count needs the topic's config).
func replicationOf(td kadm.TopicDetail) TopicDurability {
	t := TopicDurability{Topic: td.Topic, ReplicationFactor: -1}
	for _, p := range td.Partitions {
		if t.ReplicationFactor < 0 || len(p.Replicas) < t.ReplicationFactor {
			t.ReplicationFactor = len(p.Replicas)
		}
		if len(p.ISR) < len(p.Replicas) {
			t.UnderReplicated++
		}
	}
	t.ReplicationFactor = max(t.ReplicationFactor, 0)
	return t
}

// underMinISR counts td's partitions with fewer in-sync replicas than
// minISR.
func underMinISR(td kadm.TopicDetail, minISR int) int {
	n := 0
	for _, p := range td.Partitions {
		if len(p.ISR) < minISR {
			n++
		}
	}
	return n
}

// readTopicConfigs reads min.insync.replicas and
// unclean.leader.election.enable of each of ours (their effective values:
// a topic's own, else the broker's default).
func (d *Durability) readTopicConfigs(ctx context.Context, adm *kadm.Client, ours []string) error {
	rcs, err := describeTopicConfigs(ctx, adm, ours)
	if err != nil && !authorization(err) {
		return fmt.Errorf("topicadmin: describe configs: %w", err)
	}
	for i := range d.Topics {
		t := &d.Topics[i]
		rc, err := rcs.On(t.Topic, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			d.Unreadable = append(d.Unreadable, fmt.Sprintf("%s's min.insync.replicas and unclean.leader.election.enable (%v; grant DescribeConfigs on the topic)", t.Topic, err))
			continue
		}
		t.MinInsyncReplicas = configInt(rc.Configs, "min.insync.replicas", 1)
		t.UncleanElection = configBool(rc.Configs, "unclean.leader.election.enable")
	}
	return nil
}

// describeTopicConfigs describes ours, waiting (up to metadataWait) while
// a topic answers a retriable error: on a cluster, the broker asked about
// a topic created a moment ago may not know it yet
// (UNKNOWN_TOPIC_OR_PARTITION), and a setting read as unreadable refuses
// the start.
func describeTopicConfigs(ctx context.Context, adm *kadm.Client, ours []string) (kadm.ResourceConfigs, error) {
	deadline := time.Now().Add(metadataWait)
	for {
		rcs, err := adm.DescribeTopicConfigs(ctx, ours...)
		if err != nil || !anyRetriable(rcs) || time.Now().After(deadline) {
			return rcs, err
		}
		select {
		case <-ctx.Done():
			return rcs, nil
		case <-time.After(metadataRetry):
		}
	}
}

// anyRetriable reports whether a resource of rcs answered a retriable
// error.
func anyRetriable(rcs kadm.ResourceConfigs) bool {
	for _, rc := range rcs {
		if rc.Err != nil && kafkaretry.Retriable(rc.Err) {
			return true
		}
	}
	return false
}

// readInternal reads the replication of the transaction and offsets logs
// that exist: created by a first transaction or group, they keep the
// replication factor the cluster had then.
func (d *Durability) readInternal(ctx context.Context, adm *kadm.Client) error {
	td, err := adm.ListTopicsWithInternal(ctx, TransactionLog, OffsetsLog)
	if err != nil {
		return fmt.Errorf("topicadmin: metadata of the internal topics: %w", err)
	}
	for _, name := range []string{TransactionLog, OffsetsLog} {
		t, ok := td[name]
		switch {
		case !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition):
		case t.Err != nil:
			d.Unreadable = append(d.Unreadable, fmt.Sprintf("%s's replication (%v; grant Describe on the topic)", name, t.Err))
		case len(t.Partitions) > 0:
			d.Internal = append(d.Internal, replicationOf(t))
		}
	}
	return nil
}

// readBrokerSettings reads each broker's settings and keeps the weakest.
func (d *Durability) readBrokerSettings(ctx context.Context, adm *kadm.Client, ids []int32) error {
	rcs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil && !authorization(err) {
		return fmt.Errorf("topicadmin: describe broker configs: %w", err)
	}
	first := true
	for _, rc := range rcs {
		if rc.Err != nil {
			d.Unreadable = append(d.Unreadable, fmt.Sprintf("broker %s's settings (%v; grant DescribeConfigs on the cluster)", rc.Name, rc.Err))
			continue
		}
		txnRF, txnISR := configInt(rc.Configs, "transaction.state.log.replication.factor", 3), configInt(rc.Configs, "transaction.state.log.min.isr", 2)
		offRF := configInt(rc.Configs, "offsets.topic.replication.factor", 3)
		if first {
			d.TxnLogReplication, d.TxnLogMinISR, d.OffsetsLogReplication, first = txnRF, txnISR, offRF, false
		}
		d.TxnLogReplication, d.TxnLogMinISR = min(d.TxnLogReplication, txnRF), min(d.TxnLogMinISR, txnISR)
		d.OffsetsLogReplication = min(d.OffsetsLogReplication, offRF)
		d.UncleanElection = d.UncleanElection || configBool(rc.Configs, "unclean.leader.election.enable")
		d.brokerSettingsRead = true
	}
	if len(rcs) == 0 && err != nil {
		d.Unreadable = append(d.Unreadable, fmt.Sprintf("the brokers' settings (%v; grant DescribeConfigs on the cluster)", err))
	}
	return nil
}

func authorization(err error) bool {
	return errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed)
}

// configInt is key's value as an integer, def when absent or not a number.
func configInt(cs []kadm.Config, key string, def int) int {
	i := slices.IndexFunc(cs, func(c kadm.Config) bool { return c.Key == key })
	if i < 0 || cs[i].Value == nil {
		return def
	}
	n, err := strconv.Atoi(*cs[i].Value)
	if err != nil {
		return def
	}
	return n
}

func configBool(cs []kadm.Config, key string) bool {
	i := slices.IndexFunc(cs, func(c kadm.Config) bool { return c.Key == key })
	return i >= 0 && cs[i].Value != nil && *cs[i].Value == "true"
}
