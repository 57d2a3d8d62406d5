package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// netns is a network namespace of the test's own, with its own loopback:
// a process in it listens on the defaults a newcomer meets (8080, 9092,
// 9464, 9465) without colliding with anything else on the machine (other
// tests, other suites, other users' servers), so the tests of the first
// hour run the executor exactly as the README does, without a flag.
//
// It is made with unshare (a user and a network namespace) and entered
// with nsenter, both from util-linux, and ip from iproute2 brings its
// loopback up. Without them, or where the kernel refuses unprivileged
// namespaces, the tests that need one are skipped (and fail when
// TOOLEXEC_REQUIRE_NETNS=1, as CI should set).
type netns struct {
	pid    int
	holder *exec.Cmd
}

// envNetnsHold names the addresses the holder binds inside the namespace
// (comma-separated, may be empty): the test binary re-run as the holder
// (TestNetnsHolder) keeps the namespace alive and those ports busy.
const envNetnsHold = "TOOLEXEC_NETNS_HOLD"

// newNetns makes a namespace whose holder listens on hold; it ends with
// the test.
func newNetns(t *testing.T, hold ...string) *netns {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter", "ip", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipNetns(t, tool+" is not installed")
		}
	}
	cmd := exec.Command("unshare", "--user", "--map-root-user", "--net", "sh", "-c", `ip link set lo up && exec "$@"`, "sh",
		os.Args[0], "-test.short", "-test.run", "^TestNetnsHolder$")
	cmd.Env = append(os.Environ(), envNetnsHold+"="+strings.Join(hold, ","))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		skipNetns(t, err.Error())
	}
	t.Cleanup(func() {
		_ = stdin.Close() // the holder ends at EOF
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		_ = cmd.Process.Kill()
		skipNetns(t, fmt.Sprintf("no namespace (%v): %s%s", err, line, stderr.String()))
	}
	return &netns{pid: cmd.Process.Pid, holder: cmd}
}

func skipNetns(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("TOOLEXEC_REQUIRE_NETNS") == "1" {
		t.Fatalf("a network namespace of its own is required (TOOLEXEC_REQUIRE_NETNS=1): %s", why)
	}
	t.Skipf("needs a network namespace of its own: %s", why)
}

// command runs name in the namespace, in dir.
func (n *netns) command(dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--target", fmt.Sprint(n.pid), "--user", "--net", "--preserve-credentials", "--", name}, args...)...)
	cmd.Dir = dir
	return cmd
}

// shell runs script with sh in the namespace, in dir, and returns its
// stdout, stderr and exit status.
func (n *netns) shell(t *testing.T, dir, script string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := n.command(dir, "sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", script, err)
	}
	return out.String(), errb.String(), code
}

// waitReady waits until the executor in the namespace answers /readyz on
// its default --http-addr (asked with curl, which the README's commands
// need anyway), or p exits.
func (n *netns) waitReady(t *testing.T, p *proc) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !p.running() {
			t.Fatalf("the executor exited during its start:\n%s", p.output())
		}
		if _, _, code := n.shell(t, "/", readyzCheck); code == 0 {
			return
		}
	}
	t.Fatalf("the executor was not ready in 90 s:\n%s", p.output())
}

const readyzCheck = `curl -sf http://127.0.0.1:9464/readyz >/dev/null`

// TestNetnsHolder is not a test: newNetns runs the test binary with this
// test alone inside a new namespace, where it listens on the addresses of
// TOOLEXEC_NETNS_HOLD, says "held" and stays until its stdin closes.
func TestNetnsHolder(t *testing.T) {
	hold, ok := os.LookupEnv(envNetnsHold)
	if !ok {
		return
	}
	for _, addr := range strings.Split(hold, ",") {
		if addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer ln.Close()
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
}
