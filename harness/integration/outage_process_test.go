package integration

import (
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// A broker away for longer than --broker-outage no longer ends a
// process (which on Kubernetes crash-loops, and the kubelet's back-off
// then keeps it down for minutes after the broker is back): each of the
// three stays up, live (/healthz 200: its start is a loop that turns)
// and not ready (/readyz 503), through several attempts' bounds; and
// when a broker comes up at its address with the topics, it becomes
// ready without a restart.
func TestProcessesStayUpNotReadyThroughALongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	toolsFile := writeTools(t, newLedger(t).toolsYAML(""))
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"executor", []string{binary, "--data-dir", t.TempDir(), "--reconciler=false", "--gateway=false", "--partitions", "2"}},
		{"reconciler", []string{reconcilerBinary(t), "--data-dir", t.TempDir()}},
		{"gateway", []string{gatewayBinary, "--tenants", tenantsFile(t), "--instance-id", "outage"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			broker := freeAddr(t) // nothing listens there yet
			addr := freeAddr(t)
			cmd := exec.Command(c.argv[0], append(c.argv[1:], "--brokers", broker, "--tools", toolsFile, "--http-addr", addr, "--broker-outage", "1s")...)
			p := startUnready(t, c.name, cmd, addr)
			time.Sleep(6 * time.Second) // several attempts of 1 s, and their pauses
			if !p.running() {
				t.Fatalf("exited while the broker was away longer than --broker-outage:\n%s", p.output())
			}
			if h, r := httpStatus(addr, "/healthz"), httpStatus(addr, "/readyz"); h != http.StatusOK || r != http.StatusServiceUnavailable {
				t.Errorf("during the outage: /healthz %d, /readyz %d; want 200 and 503", h, r)
			}
			_, port, _ := net.SplitHostPort(broker)
			n, _ := strconv.Atoi(port)
			k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(n))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(k.Close)
			ensureTopics(t, broker)
			p.waitReady(t)
		})
	}
}
