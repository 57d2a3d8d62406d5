package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests of a newcomer's first hour run the executor as the README
// does: no flag, a fresh directory, the default addresses, in a network
// namespace of their own (netns_test.go). They use the embedded broker,
// so they run in the kfake pass of the suite only.
func firstHour(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	if realKafka {
		t.Skip("runs the embedded broker: the kfake pass of the suite runs it")
	}
}

// A fresh clone with one of the default ports taken: the executor fails
// at once naming the flag that moves the port, and starts nothing (no
// broker, no data dir).
func TestFreshStartWithABusyPortFailsAtOnce(t *testing.T) {
	firstHour(t)
	for _, c := range []struct{ addr, flag string }{
		{"127.0.0.1:8080", "--gateway-addr"}, {"127.0.0.1:9464", "--http-addr"},
		{"127.0.0.1:9092", "--embedded-addr"}, {"127.0.0.1:9465", "--reconciler-http-addr"},
	} {
		t.Run(c.flag, func(t *testing.T) {
			n := newNetns(t, c.addr)
			dir := t.TempDir()
			var out bytes.Buffer
			cmd := n.command(dir, binary)
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(25 * time.Second): // not a measure: a bound on a hang (a start that ran its broker and reconciler first takes 30 s)
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("%s busy: still running after 25 s:\n%s", c.addr, out.String())
			}
			t.Logf("%s busy: exit status %d after %s", c.addr, cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond))
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out.String(), "executor: "+c.flag+" "+c.addr+": the address is in use") ||
				!strings.Contains(out.String(), "give "+c.flag+" another address") {
				t.Fatalf("%s busy: exit status %d:\n%s", c.addr, cmd.ProcessState.ExitCode(), out.String())
			}
			if strings.Contains(out.String(), "embedded broker (kfake) started") {
				t.Fatalf("%s busy: the broker started before the refusal:\n%s", c.addr, out.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
				t.Fatalf("%s busy: a data dir was made before the refusal (%v)", c.addr, err)
			}
		})
	}
}
