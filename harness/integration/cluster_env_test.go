package integration

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/topicadmin"
)

// needCluster skips a test that aims faults at the nodes of the cluster
// of deploy/kafka/start --cluster (KAFKA_CLUSTER_BROKERS), and one that
// needs its replication.
func needCluster(t *testing.T) {
	t.Helper()
	if len(clusterSeeds) == 0 {
		t.Skip("needs the three-node cluster: KAFKA_BROKERS and KAFKA_CLUSTER_BROKERS set to deploy/kafka/start --cluster's output")
	}
}

// kafkaScript runs deploy/kafka/<name> with the test's environment (its
// KAFKA_CLUSTER_PORT and KAFKA_CLUSTER_RUN_DIR find the cluster) and
// returns its stdout.
func kafkaScript(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command("../../deploy/kafka/"+name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/kafka/%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// killNode SIGKILLs node n (its broker id) and, when the test ends,
// starts it again and waits until every partition has all its replicas
// in sync, so that the next test finds the whole cluster.
func killNode(t *testing.T, adm *kadm.Client, n int32) {
	t.Helper()
	kafkaScript(t, "node", "kill", fmt.Sprint(n))
	t.Cleanup(func() {
		kafkaScript(t, "node", "start", fmt.Sprint(n))
		waitInSync(t, adm, 2*time.Minute)
	})
}

// waitInSync waits until no partition of the cluster (internal topics
// included) has a replica out of sync.
func waitInSync(t *testing.T, adm *kadm.Client, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		lagging, err := outOfSync(adm)
		if err == nil && lagging == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas still out of sync after %s: %s (err %v)", within, lagging, err)
		}
		time.Sleep(time.Second)
	}
}

// outOfSync names the first partition with a replica out of sync, or "".
func outOfSync(adm *kadm.Client) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return "", err
	}
	for _, topic := range td.Sorted() {
		for _, p := range topic.Partitions.Sorted() {
			if p.Err != nil || len(p.ISR) < len(p.Replicas) {
				return fmt.Sprintf("%s/%d (replicas %v, in sync %v, err %v)", topic.Topic, p.Partition, p.Replicas, p.ISR, p.Err), nil
			}
		}
	}
	return "", nil
}

// leaderOf is the broker (node) leading topic's partition p, as kadm sees
// it; the test also checks that deploy/kafka/leader agrees.
func leaderOf(t *testing.T, adm *kadm.Client, topic string, p int32) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	pd, ok := td[topic].Partitions[p]
	if !ok || pd.Leader < 0 {
		t.Fatalf("%s/%d has no leader: %+v", topic, p, pd)
	}
	return pd.Leader
}

// replicationOf is the replicas of every partition of topic.
func replicationOf(t *testing.T, adm *kadm.Client, topic string) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var rf []int
	for _, p := range td[topic].Partitions.Sorted() {
		rf = append(rf, len(p.Replicas))
	}
	return rf
}

// scriptNode parses a node number printed by deploy/kafka/leader or
// coordinator.
func scriptNode(t *testing.T, out string) int32 {
	t.Helper()
	n, err := strconv.Atoi(out)
	if err != nil || !slices.Contains([]int{1, 2, 3}, n) {
		t.Fatalf("not a node number: %q", out)
	}
	return int32(n)
}

// weakEnv is an env whose topics have replication factor 1 and min ISR 1.
func weakEnv(t *testing.T) *env {
	return newEnvWith(t, topicadmin.Settings{Partitions: 2, ReplicationFactor: 1, MinInsyncReplicas: 1})
}
