package integration

import (
	"context"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// Every long-running process answers /healthz from its first moment, and
// /readyz 503 until it can serve: here no broker answers, so each waits
// (the executor up to --broker-outage, the gateway for its reply topic,
// the reconciler for the topics' metadata). A liveness probe meanwhile
// must find a live process, not a closed port.
func TestProbesAnswerWhileWaitingForTheBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	dead := freeAddr(t) // nothing listens there
	toolsFile := writeTools(t, newLedger(t).toolsYAML(""))
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"executor", []string{binary, "--data-dir", t.TempDir(), "--broker-outage", "1m", "--reconciler=false", "--gateway=false"}},
		{"reconciler", []string{reconcilerBinary(t), "--data-dir", t.TempDir()}},
		{"gateway", []string{gatewayBinary, "--tenants", tenantsFile(t), "--instance-id", "probes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			cmd := exec.Command(c.argv[0], append(c.argv[1:], "--brokers", dead, "--tools", toolsFile, "--http-addr", addr)...)
			p := startUnready(t, c.name, cmd, addr)
			if code := httpStatus(addr, "/readyz"); code != http.StatusServiceUnavailable {
				t.Errorf("/readyz %d while no broker answers, want 503", code)
			}
			time.Sleep(2 * time.Second)
			if code := httpStatus(addr, "/healthz"); code != http.StatusOK || !p.running() {
				t.Errorf("after 2 s: /healthz %d, running %v:\n%s", code, p.running(), p.output())
			}
		})
	}
}

// startUnready starts cmd and waits until it answers /healthz on addr
// (not /readyz, which it must not pass). The process is killed when the
// test ends.
func startUnready(t *testing.T, what string, cmd *exec.Cmd, addr string) *proc {
	t.Helper()
	p := startProcess(t, what, what, cmd, addr)
	deadline := time.Now().Add(10 * time.Second)
	for httpStatus(addr, "/healthz") != http.StatusOK {
		if time.Now().After(deadline) || !p.running() {
			t.Fatalf("%s: no /healthz within 10 s of its start (running %v):\n%s", what, p.running(), p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

func httpStatus(addr, path string) int {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The gateway is ready while its broker answers, and not while it does
// not: a load balancer must not send callers to an instance that can
// neither produce their calls nor read the answers.
func TestGatewayNotReadyWhileKafkaIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close()
		}
	})
	addr := c.ListenAddrs()[0]
	ensureTopics(t, addr)
	http := freeAddr(t)
	cmd := exec.Command(gatewayBinary, "--brokers", addr, "--tools", writeTools(t, newLedger(t).toolsYAML("")), "--tenants", tenantsFile(t),
		"--http-addr", http, "--instance-id", "gw-ready-0")
	p := startUnready(t, "gateway", cmd, http)
	p.waitReady(t)
	if !hasTopic(t, addr, topics.DefaultPrefix+"gateway.gw-ready-0") {
		t.Error("the reply topic is not named from --instance-id")
	}
	c.Close()
	closed = true
	deadline := time.Now().Add(30 * time.Second)
	for httpStatus(http, "/readyz") != 503 {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d 30 s after the broker went away:\n%s", httpStatus(http, "/readyz"), p.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code := httpStatus(http, "/healthz"); code != 200 {
		t.Errorf("/healthz %d: the process is alive and must say so", code)
	}
}

// adminOn is an admin client of the broker at addr, closed when the test
// ends.
func adminOn(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func ensureTopics(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := topicadmin.Ensure(ctx, adminOn(t, addr), topics.NamesWithPrefix(topics.DefaultPrefix), topicadmin.Settings{Partitions: 2, MinEventRetention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
}

func hasTopic(t *testing.T, addr, topic string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adminOn(t, addr).ListTopics(ctx, topic)
	return err == nil && td.Has(topic)
}

// An executor is not ready until every partition of its first assignment
// is restored: at the moment it first reports ready, it has restored at
// least as many partitions as it holds (here all of them, alone in its
// group).
func TestExecutorReadyOnlyOnceItsPartitionsAreRestored(t *testing.T) {
	const partitions = 4
	e := newEnv(t, partitions)
	l := newLedger(t)
	p := e.startInproc(registry(t, l.toolsYAML("")), func(c *executor.Config) { c.Registerer = prometheus.NewRegistry() })
	deadline := time.Now().Add(60 * time.Second)
	for !p.ex.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready within 60 s")
		}
		time.Sleep(time.Millisecond)
	}
	var m dto.Metric
	if err := p.ex.Metrics().Restores.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n < partitions {
		t.Fatalf("ready after %d restores, want at least %d (one per partition held)", n, partitions)
	}
}
