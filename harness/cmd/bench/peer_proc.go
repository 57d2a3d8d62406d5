package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// extProc is a process of a peer (a server, a service) that the bench
// starts, measures, kills and stops. Its stdout and stderr go to a log
// file in the scratch directory.
type extProc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// Waiting for peers: their servers start in seconds; a first start of
// restate-server provisions its cluster.
const (
	peerStartTimeout = 2 * time.Minute
	peerStopTimeout  = 30 * time.Second
	peerPollEvery    = 100 * time.Millisecond
)

func startExt(name string, cmd *exec.Cmd, logPath string) (*extProc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &extProc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *extProc) pid() int { return p.cmd.Process.Pid }

func (p *extProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *extProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends sig and waits peerStopTimeout, then kills.
func (p *extProc) stop(sig os.Signal) error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(peerStopTimeout):
		p.kill()
		return fmt.Errorf("%s did not stop within %s; killed", p.name, peerStopTimeout)
	}
}

// logTail is the end of the process's log, for error messages.
func (p *extProc) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// waitUntil polls ok until it returns true, p exits, or the timeout.
func (p *extProc) waitUntil(ctx context.Context, what string, ok func() bool) error {
	deadline := time.Now().Add(peerStartTimeout)
	for time.Now().Before(deadline) {
		if ok() {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited while waiting for %s: %s", p.name, what, p.logTail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(peerPollEvery):
		}
	}
	return fmt.Errorf("%s: no %s within %s: %s", p.name, what, peerStartTimeout, p.logTail())
}

// listening reports whether something accepts TCP connections at addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// httpOK reports whether GET url answers 200.
func httpOK(url string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ports hands out the listen addresses of the peer comparison: from
// --port-base upwards (skipping ports in use), or free ports the OS picks.
type ports struct {
	mu   sync.Mutex
	next int // 0: let the OS pick
}

// maxPortProbes bounds the search for a free port above --port-base.
const maxPortProbes = 200

func (p *ports) addr() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == 0 {
		return freeAddr()
	}
	for range maxPortProbes {
		a := fmt.Sprintf("127.0.0.1:%d", p.next)
		p.next++
		if ln, err := net.Listen("tcp", a); err == nil {
			ln.Close()
			return a, nil
		}
	}
	return "", errors.New("no free port above --port-base")
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// buildPeerService builds the Go service in src/name (a module of its
// own) into dir and returns the binary's path.
func buildPeerService(ctx context.Context, src, name, dir string) (string, error) {
	out := filepath.Join(dir, name)
	abs, err := filepath.Abs(filepath.Join(src, name))
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = abs
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %w\n%s", abs, err, b)
	}
	return out, nil
}
