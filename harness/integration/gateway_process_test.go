package integration

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/gateway"
)

// The executor's embedded gateway without --tenants serves the tenant
// "default" with a random token kept in <data-dir>/gateway.token (0600),
// names the file at start (never the token), survives a SIGHUP, and a
// restart reuses the token.
func TestEmbeddedGatewayDefaultToken(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	dir := t.TempDir()
	start := func() (*proc, string) {
		gw := freeAddr(t)
		http := freeAddr(t)
		cmd := exec.Command(binary, "--brokers", seedList(), "--data-dir", dir, "--tools", writeTools(t, l.toolsYAML("")),
			"--http-addr", http, "--topic-prefix", e.prefix, "--group", e.group, "--partitions", "3",
			"--session-timeout", "3s", "--rebalance-timeout", "12s", "--drain-timeout", "2s", "--reconciler=false", "--gateway-addr", gw)
		return e.launch("ex-gw", "executor", cmd, http), gw
	}
	p, gw := start()
	path := filepath.Join(dir, "gateway.token")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", info, err)
	}
	b, _ := os.ReadFile(path)
	token := strings.TrimSpace(string(b))
	if strings.Contains(p.output(), token) || !strings.Contains(p.output(), path) {
		t.Fatalf("the start must name the token file, never the token (stdout is a log):\n%s", p.output())
	}
	// Without --tenants there is nothing to reload; SIGHUP does not kill it.
	p.signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.output(), "no --tenants file to reload") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !p.running() || !strings.Contains(p.output(), "no --tenants file to reload") {
		t.Fatalf("SIGHUP without --tenants:\n%s", p.output())
	}
	call := func(gw, token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+gw+"/v1/tools/t.ok/calls", strings.NewReader(`{"a":1}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", "embedded-1")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 && resp.Header.Get("Idempotent-Replayed") == "true" {
			return 299 // a replay
		}
		return resp.StatusCode
	}
	if c := call(gw, token); c != 200 {
		t.Fatalf("call with the printed token: %d", c)
	}
	if c := call(gw, "not-the-token"); c != 401 {
		t.Fatalf("another token: %d", c)
	}
	p.signal(syscall.SIGTERM)
	p.exited(t, 30*time.Second)
	_, gw = start()
	if c := call(gw, token); c != 299 {
		t.Fatalf("after a restart, the same token and key: %d, want a replay", c)
	}
}

// cmd/gateway reloads its tenants file on SIGHUP: a rotated token works at
// once and the removed one no longer does; a file with an error is refused
// whole (the log names its line) and the tenants in force stay.
func TestGatewayReloadsTenantsOnSIGHUP(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	yaml := gatewayTools(l)
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	write := func(tokens ...string) {
		s := "tenants:\n  - name: acme\n    tokens:\n"
		for _, tok := range tokens {
			s += fmt.Sprintf("      - %q\n", gateway.HashToken(tok))
		}
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("old-token")
	p := e.startGatewayProc("gw-hup", yaml, path)
	status := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.http+"/v1/tools", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitStatus := func(token string, want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if status(token) == want {
				return
			}
		}
		t.Fatalf("token %s: status %d, want %d\n%s", token, status(token), want, p.output())
	}
	waitStatus("old-token", 200)
	waitStatus("new-token", 401)
	write("old-token", "new-token") // rotation, step 1: both
	p.signal(syscall.SIGHUP)
	waitStatus("new-token", 200)
	waitStatus("old-token", 200)
	if err := os.WriteFile(path, []byte("tenants:\n  - name: acme\n    tokens: [plain-text-token]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.output(), "line 3") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(p.output(), "tenants file not reloaded") || !strings.Contains(p.output(), "line 3") {
		t.Fatalf("the refused reload is not logged with its line:\n%s", p.output())
	}
	waitStatus("new-token", 200) // the tenants in force stayed
	write("new-token")           // rotation, step 2: the old one goes
	p.signal(syscall.SIGHUP)
	waitStatus("old-token", 401)
	waitStatus("new-token", 200)
}

// cmd/gateway takes SIGHUP from its first moment: one sent while the start
// waits for a broker (up to --broker-outage) neither kills it nor is lost.
func TestGatewaySurvivesSIGHUPDuringStart(t *testing.T) {
	l := newLedger(t)
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("tenants:\n  - name: acme\n    tokens: [%q]\n", gateway.HashToken("tok"))), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(gatewayBinary, "--brokers", freeAddr(t), "--tools", writeTools(t, gatewayTools(l)), "--tenants", path,
		"--http-addr", addr, "--instance-id", "gw-hup-start", "--broker-outage", "60s")
	p := startProcess(t, "gw-hup-start", "gateway", cmd, addr)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
	}
	p.signal(syscall.SIGHUP)
	time.Sleep(time.Second)
	if !p.running() {
		t.Fatalf("SIGHUP during the start killed the gateway:\n%s", p.output())
	}
}
