package integration

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// On a single broker (kfake, or deploy/kafka's one node) the member
// starts whatever the replication, with one warning line that says what
// it survives.
func TestSingleBrokerStartsWithOneWarning(t *testing.T) {
	if len(clusterSeeds) > 0 {
		t.Skip("the broker is a cluster: TestClusterRefusesWeakDurability")
	}
	e := newEnv(t, 2)
	l := newLedger(t)
	var mu sync.Mutex
	var buf bytes.Buffer
	p := e.startInproc(registry(t, l.toolsYAML("")), func(cfg *executorConfig) {
		cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	if res := e.call(e.client(), wire.Intent{Tool: "t.ok", Key: "single-1", Args: map[string]any{}}, 60*time.Second); res.Status != codes.StatusSucceeded {
		t.Fatalf("%+v", res)
	}
	p.stop()
	mu.Lock()
	defer mu.Unlock()
	var warned []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "single-broker Kafka") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], "not the loss of the broker's disk") {
		t.Fatalf("want one warning about the single broker, got %d:\n%s", len(warned), buf.String())
	}
}

// executor topics creates the topics with an explicit replication factor
// and min ISR (3 and 2 on a cluster, 1 and 1 on a single broker unless
// given) and refuses existing topics weaker than that.
func TestExecutorTopicsReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	want := 1
	if len(clusterSeeds) > 0 {
		want = 3
	}
	prefix := "tp" + randHex(3) + "."
	out, err := exec.Command(binary, "topics", "--brokers", seedList(), "--topic-prefix", prefix, "--partitions", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("executor topics: %v\n%s", err, out)
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := topics.NamesWithPrefix(prefix)
	d, err := topicadmin.ReadDurability(ctx, kadm.NewClient(raw), names.All()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range d.Topics {
		if td.ReplicationFactor != want || td.MinInsyncReplicas != min(want, 2) {
			t.Fatalf("%s: replication %d, min ISR %d; want %d and %d\n%s", td.Topic, td.ReplicationFactor, td.MinInsyncReplicas, want, min(want, 2), out)
		}
	}
	if want == 1 {
		return
	}
	e := weakEnv(t)
	out, err = exec.Command(binary, "topics", "--brokers", seedList(), "--topic-prefix", e.prefix, "--partitions", "2").CombinedOutput()
	if err == nil || !strings.Contains(string(out), e.names.Events+": replication factor 1, need at least 3") {
		t.Fatalf("executor topics on RF 1 topics: %v\n%s", err, out)
	}
}
