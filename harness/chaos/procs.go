package chaos

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Build compiles the executor (with -tags faults) and the reconciler into
// dir. repo is the module root.
func Build(repo, dir string) (executor, reconciler string, err error) {
	executor, reconciler = filepath.Join(dir, "bin", "executor"), filepath.Join(dir, "bin", "reconciler")
	for _, b := range [][]string{
		{"build", "-tags", "faults", "-o", executor, "./cmd/executor"},
		{"build", "-o", reconciler, "./cmd/reconciler"},
	} {
		cmd := exec.Command("go", b...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("chaos: go %v: %w\n%s", b, err, out)
		}
	}
	return executor, reconciler, nil
}

// Proc is one child process (an executor or the reconciler). Its output
// goes to a log file. Methods are safe for concurrent use.
type Proc struct {
	Name    string
	DataDir string
	HTTP    string
	Log     string
	bin     string
	args    []string

	mu struct {
		sync.Mutex
		cmd     *exec.Cmd
		done    chan struct{}
		exit    int
		stopped bool // SIGSTOPped
		lives   int  // starts so far
	}
}

// Start runs the process with extra environment (e.g. TOOLEXEC_FAULT).
func (p *Proc) Start(env ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "\n===== start %s env=%v =====\n", time.Now().Format(time.RFC3339Nano), env)
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("chaos: start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.cmd, p.mu.done, p.mu.stopped = cmd, done, false
	p.mu.lives++
	go func() {
		err := cmd.Wait()
		f.Close()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		p.mu.Lock()
		p.mu.exit = code
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	done := p.mu.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Lives counts the starts of the process: a new life counts its metrics
// from zero.
func (p *Proc) Lives() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.lives
}

// Started reports whether the process was ever started.
func (p *Proc) Started() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cmd != nil
}

// ExitCode is the exit code of the last life that ended (-1 for a signal).
func (p *Proc) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.exit
}

// Done is closed when the current life ends.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.mu.done
}

// Signal sends s to the current life.
func (p *Proc) Signal(s syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil && p.mu.cmd.Process != nil {
		_ = p.mu.cmd.Process.Signal(s)
		switch s {
		case syscall.SIGSTOP:
			p.mu.stopped = true
		case syscall.SIGCONT:
			p.mu.stopped = false
		}
	}
}

// Kill sends SIGKILL (after SIGCONT, so a stopped process dies too) and
// waits for the exit.
func (p *Proc) Kill() {
	p.Signal(syscall.SIGKILL)
	p.Signal(syscall.SIGCONT)
	<-p.Done()
}

// Term sends SIGTERM and waits up to d, then kills.
func (p *Proc) Term(d time.Duration) {
	p.Signal(syscall.SIGCONT)
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(d):
		p.Kill()
	}
}

// WaitReady polls /readyz until 200, the process exits, or d passes.
func (p *Proc) WaitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !p.Running() {
			return fmt.Errorf("chaos: %s exited during start (log %s)", p.Name, p.Log)
		}
		if resp, err := http.Get("http://" + p.HTTP + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("chaos: %s not ready within %s (log %s)", p.Name, d, p.Log)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Broker runs deploy/kafka/{start,stop} for one run dir and port.
type Broker struct {
	Repo, RunDir  string
	Port, CtlPort int
	Extra         string // server.properties lines (KAFKA_EXTRA_CONFIG)
	Features      string // feature levels at format (KAFKA_FEATURES)
	Owned         bool
	LogW          *bytes.Buffer
}

func (b *Broker) env() []string {
	return append(os.Environ(), fmt.Sprintf("KAFKA_PORT=%d", b.Port), fmt.Sprintf("KAFKA_CONTROLLER_PORT=%d", b.CtlPort), "KAFKA_RUN_DIR="+b.RunDir,
		"KAFKA_EXTRA_CONFIG="+b.Extra, "KAFKA_FEATURES="+b.Features)
}

func (b *Broker) script(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(b.Repo, "deploy/kafka", name), args...)
	cmd.Env = b.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: deploy/kafka/%s: %w\n%s", name, err, out)
	}
	return nil
}

// Start starts the broker (idempotent).
func (b *Broker) Start() error { return b.script("start") }

// Stop stops it cleanly (SIGTERM).
func (b *Broker) Stop() error { return b.script("stop") }

// Wipe stops it and deletes its data.
func (b *Broker) Wipe() error { return b.script("stop", "--wipe") }

// KillHard sends SIGKILL to the broker pid of the run dir.
func (b *Broker) KillHard() error {
	raw, err := os.ReadFile(filepath.Join(b.RunDir, "kafka.pid"))
	if err != nil {
		return fmt.Errorf("chaos: broker pid: %w", err)
	}
	var pid int
	if _, err := fmt.Sscan(string(raw), &pid); err != nil || pid <= 1 {
		return fmt.Errorf("chaos: broker pid file %q", raw)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("chaos: kill -9 broker %d: %w", pid, err)
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// Addr is the broker's client address.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.Port) }
