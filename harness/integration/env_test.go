package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// env is one test's private world on the shared broker.
type env struct {
	t          *testing.T
	prefix     string
	names      topics.Names
	group      string
	partitions int32
	adm        *kadm.Client
	raw        *kgo.Client
	// callerTrace is the in-process gateways' Config.CallerTrace ("": the
	// default, link).
	callerTrace gateway.CallerTrace
}

func newEnv(t *testing.T, partitions int32) *env {
	return newEnvWith(t, topicadmin.Settings{Partitions: partitions})
}

// newEnvWith is newEnv with the topics created by s (their replication,
// say); s.MinEventRetention defaults to 48 h.
func newEnvWith(t *testing.T, s topicadmin.Settings) *env {
	partitions := s.Partitions
	if s.MinEventRetention == 0 {
		s.MinEventRetention = 48 * time.Hour
	}
	if testing.Short() {
		t.Skip("integration test")
	}
	id := randHex(4)
	e := &env{t: t, prefix: "it" + id + ".", group: "g" + id, partitions: partitions}
	e.names = topics.NamesWithPrefix(e.prefix)
	raw, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	e.raw, e.adm = raw, kadm.NewClient(raw)
	t.Cleanup(raw.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := topicadmin.Ensure(ctx, e.adm, e.names, s); err != nil {
		t.Fatal(err)
	}
	return e
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// registry builds an HTTP tool registry from YAML.
func registry(t *testing.T, yaml string) *tools.Registry {
	t.Helper()
	cfg, err := tools.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.FromConfig(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// inproc is an executor running in the test process.
type inproc struct {
	running
	ex  *executor.Executor
	dir string
}

// inprocConfig is the configuration of a member in the test process.
func (e *env) inprocConfig(reg *tools.Registry) executor.Config {
	return executor.Config{
		Brokers: brokers, Names: e.names, Group: e.group, DataDir: e.t.TempDir(), Tools: reg,
		SessionTimeout: 3 * time.Second, RebalanceTimeout: 10 * time.Second, DrainTimeout: 5 * time.Second,
		TransactionTimeout: 10 * time.Second,
		Logger:             testLogger(e.t),
		KafkaLogLevel:      cli.KafkaLogLevel(os.Getenv("IT_KAFKA_LOG")), // franz-go's own logs in the test's members
		Settings:           topicadmin.Settings{Partitions: e.partitions},
	}
}

func (e *env) startInproc(reg *tools.Registry, mod func(*executor.Config)) *inproc {
	e.t.Helper()
	cfg := e.inprocConfig(reg)
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	ex, err := executor.New(ctx, cfg)
	cancel()
	if err != nil {
		e.t.Fatal(err)
	}
	p := &inproc{running: runInTest(ex.Run, ex.Close), ex: ex, dir: cfg.DataDir}
	e.t.Cleanup(p.stop)
	return p
}

// running is a member's Run loop in the test process: the executor's and
// the reconciler's are started and stopped alike.
type running struct {
	cancel  context.CancelFunc // nil once stopped
	done    chan error         // Run's error
	release func()             // closes the member after Run returned
}

func runInTest(run func(context.Context) error, release func()) running {
	ctx, cancel := context.WithCancel(context.Background())
	r := running{cancel: cancel, done: make(chan error, 1), release: release}
	go func() { r.done <- run(ctx) }()
	return r
}

// stop shuts the member down gracefully (the executor drains; both leave
// their group) and releases it. Idempotent.
func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.release()
	r.cancel = nil
}

// logLevel is warn unless IT_LOG=debug or IT_LOG=info.
func logLevel() slog.Level {
	switch os.Getenv("IT_LOG") {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// testLogger logs into t's output at logLevel.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: logLevel()}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

// proc is an executor or a reconciler running as its own process.
type proc struct {
	name string
	what string // "executor" or "reconciler", for the messages
	cmd  *exec.Cmd
	log  *bytes.Buffer
	http string
	// metrics is where a gateway serves /metrics ("": on http).
	metrics string
	mu      *sync.Mutex
	done    chan struct{}
}

// startProc runs the executor binary. extraEnv may set TOOLEXEC_FAULT.
func (e *env) startProc(toolsYAML, dataDir string, extraEnv ...string) *proc {
	return e.startNamedProc("x"+randHex(3), toolsYAML, dataDir, extraEnv...)
}

// startNamedProc runs the executor binary with client id name.
func (e *env) startNamedProc(name, toolsYAML, dataDir string, extraEnv ...string) *proc {
	e.t.Helper()
	toolsFile := writeTools(e.t, toolsYAML)
	if dataDir == "" {
		dataDir = e.t.TempDir()
	}
	addr := freeAddr(e.t)
	cmd := exec.Command(binary, "--brokers", seedList(), "--data-dir", dataDir, "--tools", toolsFile,
		"--http-addr", addr, "--topic-prefix", e.prefix, "--group", e.group,
		"--partitions", fmt.Sprint(e.partitions), "--session-timeout", "3s", "--rebalance-timeout", "12s",
		"--drain-timeout", "8s", "--transaction-timeout", "10s", "--client-id", name,
		// The suite runs reconcilers itself, where it wants them.
		"--reconciler=false", "--gateway=false")
	cmd.Env = append(os.Environ(), extraEnv...)
	return e.launch(name, "executor", cmd, addr)
}

// launch starts cmd (startProcess) and waits until it answers /readyz on
// addr.
func (e *env) launch(name, what string, cmd *exec.Cmd, addr string) *proc {
	e.t.Helper()
	p := startProcess(e.t, name, what, cmd, addr)
	p.waitReady(e.t)
	return p
}

// startProcess starts cmd with its output captured, and kills it when the
// test ends, showing its log if the test failed.
func startProcess(t *testing.T, name, what string, cmd *exec.Cmd, addr string) *proc {
	t.Helper()
	p := &proc{name: name, what: what, cmd: cmd, log: &bytes.Buffer{}, http: addr, mu: &sync.Mutex{}, done: make(chan struct{})}
	w := lockedWriter{p.mu, p.log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a test may have left it stopped (SIGSTOP)
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s log (pid %d):\n%s", p.what, cmd.Process.Pid, p.output())
		}
	})
	return p
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// writeTools writes a tool file for a process under test and returns its path.
func writeTools(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *proc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited during start:\n%s", p.what, p.output())
		default:
		}
		resp, err := http.Get("http://" + p.http + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready in 60s:\n%s", p.what, p.output())
}

// exited waits for the process to end.
func (p *proc) exited(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s did not exit within %s:\n%s", p.what, within, p.output())
	}
}

func (p *proc) signal(s os.Signal) { _ = p.cmd.Process.Signal(s) }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// client returns an agent client for this env.
func (e *env) client() *client.Client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, client.Config{Brokers: brokers, Prefix: e.prefix})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.Close)
	return c
}

// call runs one intent through the client and fails the test on error.
func (e *env) call(c *client.Client, in wire.Intent, within time.Duration) *wire.Result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := c.Call(ctx, in)
	if err != nil {
		e.t.Fatalf("call %s/%s (%s): %v (last answer %+v)", in.Tenant, in.Key, in.Tool, err, res)
	}
	return res
}

// callPending expects the key to be in doubt: a pending answer and no
// terminal one within the wait.
func (e *env) callPending(c *client.Client, in wire.Intent, within time.Duration) *wire.Result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := c.Call(ctx, in)
	if err == nil {
		e.t.Fatalf("want the key in doubt, got a terminal answer %+v", res)
	}
	if res == nil || res.Status != codes.StatusPending {
		e.t.Fatalf("want a pending answer, got %+v (err %v)", res, err)
	}
	return res
}

// owner waits until the group is stable with `members` members and returns
// the client id of the member that owns partition p of the intents topic.
func (e *env) owner(p int32, members int, within time.Duration) string {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if id := e.stableOwner(p, members); id != "" {
			return id
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.t.Fatalf("group %s not stable with %d members within %s", e.group, members, within)
	return ""
}

func (e *env) stableOwner(p int32, members int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gs, err := e.adm.DescribeGroups(ctx, e.group)
	if err != nil {
		return ""
	}
	g := gs[e.group]
	if g.State != "Stable" || len(g.Members) != members {
		return ""
	}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			if t.Topic == e.names.Intents && slices.Contains(t.Partitions, p) {
				return m.ClientID
			}
		}
	}
	return ""
}
