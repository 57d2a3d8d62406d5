package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGatewayConnectionFloods measures what two floods of connections
// cost the gateway process: 3,000 connections that each send one
// unauthenticated GET and stay open, and 400 connections that each
// trickle a 1 MB header over 3.6 s (answered 401 or 431); then, with the
// process's descriptors limited to 1,024, whether an authenticated call
// is answered while 1,100 unauthenticated connections were opened. It
// logs the process's descriptors and resident memory (VmRSS, VmHWM); it
// asserts nothing (the figures are the closing note's). By hand
// (GATEWAY_CONN_FLOOD=1); it runs against any version of cmd/gateway,
// so the figures before and after a change come from one test.
func TestGatewayConnectionFloods(t *testing.T) {
	if os.Getenv("GATEWAY_CONN_FLOOD") == "" {
		t.Skip("by hand: GATEWAY_CONN_FLOOD=1")
	}
	e := newEnv(t, 1)
	yaml := gatewayTools(newLedger(t))
	e.startInproc(registry(t, yaml), nil)

	p := e.floodGateway("gw-idle", yaml, "")
	t.Logf("idle flood: before %s", procFigures(p))
	conns := openIdle(t, p.http, 3000)
	t.Logf("idle flood: 3,000 connections, each one unauthenticated GET answered, held by the client: %s", procFigures(p))
	time.Sleep(2 * time.Second)
	t.Logf("idle flood: 2 s later: %s", procFigures(p))
	closeAll(conns)

	p = e.floodGateway("gw-trickle", yaml, "")
	t.Logf("trickle flood: before %s", procFigures(p))
	codes := trickle(t, p.http, 400, 1<<20, 3600*time.Millisecond)
	t.Logf("trickle flood: 400 connections trickling a 1 MB header over 3.6 s, answers %v: %s", codes, procFigures(p))

	p = e.floodGateway("gw-limited", yaml, "ulimit -n 1024 && ")
	conns = openIdle(t, p.http, 1100)
	start := time.Now()
	status, err := authedList(p.http)
	t.Logf("descriptors limited to 1,024, 1,100 unauthenticated connections held by the client: an authenticated GET /v1/tools: %d %v in %s; %s",
		status, err, time.Since(start).Round(time.Millisecond), procFigures(p))
	closeAll(conns)
}

// floodGateway starts cmd/gateway behind prefix (a shell's ulimit), with
// its /metrics off the agents' port where the binary has the flag.
func (e *env) floodGateway(name, toolsYAML, prefix string) *proc {
	e.t.Helper()
	addr := freeAddr(e.t)
	args := []string{gatewayBinary, "--brokers", seedList(), "--tools", writeTools(e.t, toolsYAML), "--tenants", tenantsFile(e.t),
		"--http-addr", addr, "--topic-prefix", e.prefix, "--instance-id", name + "-" + randHex(3), "--client-id", name}
	if usage, _ := exec.Command(gatewayBinary, "-h").CombinedOutput(); strings.Contains(string(usage), "metrics-addr") {
		args = append(args, "--metrics-addr", freeAddr(e.t))
	}
	cmd := exec.Command("sh", "-c", prefix+"exec \"$@\"", "sh")
	cmd.Args = append(cmd.Args, args...)
	return e.launch(name, "gateway", cmd, addr)
}

// procFigures are the process's open descriptors and memory.
func procFigures(p *proc) string {
	pid := p.cmd.Process.Pid
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	field := func(name string) string {
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return strings.TrimSpace(v)
			}
		}
		return "?"
	}
	return fmt.Sprintf("%d fds, VmRSS %s, VmHWM %s", len(fds), field("VmRSS"), field("VmHWM"))
}

// openIdle opens n connections, sends one unauthenticated GET on each and
// reads its answer, and keeps them open.
func openIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	out := make([]net.Conn, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				return
			}
			out[i] = c
			_ = c.SetDeadline(time.Now().Add(15 * time.Second))
			if _, err := io.WriteString(c, "GET /v1/tools HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			_ = c.SetDeadline(time.Time{})
		})
	}
	wg.Wait()
	return out
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// trickle opens n connections that each send a header of size bytes in
// pieces over d, and returns the answers' statuses by count.
func trickle(t *testing.T, addr string, n, size int, d time.Duration) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	const pieces = 36
	chunk := strings.Repeat("a", size/pieces)
	for range n {
		wg.Go(func() {
			status := 0
			defer func() { mu.Lock(); codes[status]++; mu.Unlock() }()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(d + 30*time.Second))
			_, _ = io.WriteString(c, "GET /v1/tools HTTP/1.1\r\nHost: x\r\nX-Pad: ")
			for range pieces {
				if _, err := io.WriteString(c, chunk); err != nil {
					break // the server answered and closed
				}
				time.Sleep(d / pieces)
			}
			_, _ = io.WriteString(c, "\r\n\r\n")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return codes
}

// authedList is one authenticated GET /v1/tools, on a new connection.
func authedList(addr string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/tools", nil)
	req.Header.Set("Authorization", "Bearer "+gwTokens["acme"])
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
