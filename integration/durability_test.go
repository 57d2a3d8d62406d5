package integration

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/topics"
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
	if res := e.call(e.client(), topics.Intent{Tool: "t.ok", Key: "single-1", Args: map[string]any{}}, 60*time.Second); res.Status != topics.StatusSucceeded {
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
