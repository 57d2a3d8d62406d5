package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// child is the parent's handle on a member process.
type child struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	exited  chan struct{}
	logPath string
	ready   string // the child's first line
}

// childReplyTimeout bounds one command: stats are instant, but the
// member's loop may be inside a restore.
const childReplyTimeout = 60 * time.Second

// startChild runs this binary as a member and waits for its ready line.
// Its stderr goes to logPath.
func startChild(name string, o memberOpts, logPath string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd := exec.Command(self, o.args()...)
	cmd.Stderr = logf
	c := &child{name: name, cmd: cmd, lines: make(chan string, 1), exited: make(chan struct{}), logPath: logPath}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go c.readLines(stdout)
	if c.ready, err = c.reply(2 * time.Minute); err != nil {
		c.kill()
		_ = cmd.Wait()
		return nil, err
	}
	return c, nil
}

func (c *child) readLines(r io.Reader) {
	defer close(c.lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 32<<20) // a member's hop events (trace) fill long lines
	for sc.Scan() {
		c.lines <- sc.Text()
	}
}

// reply waits for the next line from the child.
func (c *child) reply(timeout time.Duration) (string, error) {
	select {
	case line, ok := <-c.lines:
		if !ok {
			return "", fmt.Errorf("%s exited: %s", c.name, c.logTail())
		}
		return line, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("%s did not answer within %s: %s", c.name, timeout, c.logTail())
	}
}

// do sends one command and decodes the reply into v (nil: check for an
// error only).
func (c *child) do(command string, v any) error {
	if _, err := io.WriteString(c.stdin, command+"\n"); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	line, err := c.reply(childReplyTimeout)
	if err != nil {
		return err
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &e) == nil && e.Error != "" {
		return fmt.Errorf("%s: %s", c.name, e.Error)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal([]byte(line), v)
}

func (c *child) stats() (counters, error) {
	var s counters
	err := c.do("stats", &s)
	return s, err
}

// stop closes stdin (a graceful shutdown) and waits; it kills the child
// if it does not exit in time.
func (c *child) stop() error {
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w: %s", c.name, err, c.logTail())
		}
		return nil
	case <-time.After(45 * time.Second):
		c.kill()
		return errors.New(c.name + " did not stop within 45s; killed")
	}
}

func (c *child) kill() {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
}

// killHard is SIGKILL and reap: the crash of the peer comparison. The
// child must not be stopped afterwards.
func (c *child) killHard() {
	c.kill()
	_ = c.cmd.Wait()
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// logTail is the end of the child's stderr, for error messages.
func (c *child) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}
