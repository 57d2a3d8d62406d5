package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The README's quick start, run as a newcomer runs it: the executor with
// no flag in a fresh directory (its data in ./data, the defaults 9092,
// 9464, 9465 and 8080, in a namespace of its own), then the commands of
// the README's blocks as they are written, each checked against what its
// comment claims. A README command this test does not know, or one it
// knows that the README no longer has, fails it: the two change together.
//
// The blocks: the Kafka quick start (Terminal 2), the approval quick start
// (tr-1: a call that waits for a person, approved), the curl quick start,
// the key that goes from in doubt to settled (refund-9: the reconciler's
// retry after the tool's 10 s pending_ttl), and the console's scripted
// sign-in, run side by side; then the restart the README promises the
// keys survive. The escalation of page-7 is not run: it waits its pending_ttl and the fact grace (2 min).
func TestReadmeQuickStart(t *testing.T) {
	firstHour(t)
	n := newNetns(t)
	qs := &quickStart{t: t, n: n, dir: t.TempDir(), reconciler: buildReconciler(t)}
	p := qs.start()
	out := p.output()
	for _, want := range []string{`gateway: http://127.0.0.1:8080, tenant "default", its token in ` + filepath.Join(qs.dir, "data", "gateway.token"),
		"operator console: http://127.0.0.1:9465/console", "its token in", filepath.Join(qs.dir, "data", "console.token")} {
		if !strings.Contains(out, want) {
			t.Errorf("the start does not print %q:\n%s", want, out)
		}
	}
	// One summary line of the restores of the first assignment, not one
	// line per partition.
	if c := strings.Count(out, `msg="partitions restored" partitions=12`); c != 1 || strings.Contains(out, `msg="partition restored"`) {
		t.Errorf("restores logged %d summaries, or a line per partition:\n%s", c, out)
	}
	t.Run("blocks", func(t *testing.T) {
		for name, block := range map[string]struct {
			section string
			n       int
		}{
			"kafka":    {"## Quick start: a call, its replay and a conflict in a minute", 1},
			"approval": {"## Quick start: a call that waits for a person's approval", 0},
			"curl":     {"## Quick start over HTTP: curl, and an MCP client", 0},
			"settled":  {"## Watching a key go from in doubt to settled", 0},
			"console":  {"## Watching a key go from in doubt to settled", 2},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				qs.runBlock(t, readmeBlock(t, block.section, block.n))
			})
		}
	})
	if t.Failed() {
		return
	}
	// "run the block again, also after restarting the executor, and
	// order-1 and rf-1 answer from their records"
	p.signal(syscall.SIGTERM)
	p.exited(t, 60*time.Second)
	qs.start()
	again := qs.run(t, readmeCommand{line: `go run ./cmd/executor send --tool demo.echo --key order-1 --args '{"amount":120,"currency":"EUR"}'`})
	if r := again.json(t); again.code != 0 || r["was_replay"] != true || call(r) != 1 {
		t.Errorf("order-1 after a restart: %s", again)
	}
	rf := qs.run(t, readmeCommand{line: `go run ./cmd/executor send --tool demo.refund --key rf-1 --args '{"amount":5}'`})
	if r := rf.json(t); r["was_replay"] != true || refundID(r) != qs.fact("rf-1") {
		t.Errorf("rf-1 after a restart (its refund_id was %s): %s", qs.fact("rf-1"), rf)
	}
}

// quickStart is the newcomer's directory and the namespace its commands
// run in.
type quickStart struct {
	t          *testing.T
	n          *netns
	dir        string
	reconciler string

	mu    sync.Mutex
	facts map[string]string // what one command's answer says that a later one checks
}

// start runs the executor as the README does and waits until it is ready.
func (q *quickStart) start() *proc {
	q.t.Helper()
	p := startProcess(q.t, "quickstart", "executor", q.n.command(q.dir, binary), "")
	q.n.waitReady(q.t, p)
	return p
}

// runBlock runs a block's commands in order (one ending in & alongside the
// next) and checks each against its comment.
func (q *quickStart) runBlock(t *testing.T, cmds []readmeCommand) {
	prelude := ""
	var bg chan outcome
	for _, c := range cmds {
		if c.prelude {
			prelude += c.line + "\n"
			continue
		}
		exp, ok := quickStartClaims[c.line]
		if !ok {
			t.Errorf("README command without a check in this test: %s", c.line)
			continue
		}
		if !strings.Contains(c.comment, exp.claim) {
			t.Errorf("README no longer claims %q above %s\n(its comment: %s)", exp.claim, c.line, c.comment)
		}
		run := c
		run.line = prelude + c.line
		if c.background {
			bg = make(chan outcome, 1)
			go func() { bg <- q.run(t, run) }()
			continue
		}
		o := q.run(t, run)
		var alongside outcome
		if bg != nil {
			alongside, bg = <-bg, nil
		}
		exp.check(q, t, o, alongside)
	}
}

// run runs one README command in the newcomer's directory.
func (q *quickStart) run(t *testing.T, c readmeCommand) outcome {
	t.Helper()
	line := strings.TrimSuffix(strings.TrimSpace(c.line), "&")
	line = strings.ReplaceAll(line, "go run ./cmd/executor", shellQuote(binary))
	line = strings.ReplaceAll(line, "go run ./cmd/reconciler", shellQuote(q.reconciler))
	stdout, stderr, code := q.n.shell(t, q.dir, line)
	return outcome{line: c.line, comment: c.comment, stdout: stdout, stderr: stderr, code: code}
}

func (q *quickStart) remember(k, v string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.facts == nil {
		q.facts = map[string]string{}
	}
	q.facts[k] = v
}

func (q *quickStart) fact(key string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.facts[key]
}

// outcome is what one command printed and its exit status.
type outcome struct {
	line, comment, stdout, stderr string
	code                          int
}

func (o outcome) String() string {
	return fmt.Sprintf("%s\nexit status %d\nstdout:\n%s\nstderr:\n%s", o.line, o.code, o.stdout, o.stderr)
}

// json is the one JSON document stdout holds.
func (o outcome) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	if err := dec.Decode(&m); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON document (%v): %s", err, o)
	}
	return m
}

// http splits curl -si's output into the response and its body.
func (o outcome) http(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(o.stdout)), nil)
	if err != nil {
		t.Fatalf("not an HTTP response (%v): %s", err, o)
	}
	_, body, _ := strings.Cut(o.stdout, "\r\n\r\n")
	return resp, body
}

// events is the "event" of each JSON document of executor history.
func (o outcome) events(t *testing.T) ([]string, []map[string]any) {
	t.Helper()
	var names []string
	var all []map[string]any
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("history is not JSON documents (%v): %s", err, o)
		}
		names, all = append(names, fmt.Sprint(m["event"])), append(all, m)
	}
	return names, all
}

func call(r map[string]any) float64 {
	res, _ := r["result"].(map[string]any)
	f, _ := res["call"].(float64)
	return f
}

func refundID(r map[string]any) string {
	res, _ := r["result"].(map[string]any)
	s, _ := res["refund_id"].(string)
	return s
}

// claim is what a README command's comment must say, and the check that
// it holds. bg is the outcome of the command run alongside (a command
// ending in &), when there is one.
type claim struct {
	claim string
	check func(q *quickStart, t *testing.T, o, bg outcome)
}

var lostRefundID = regexp.MustCompile(`^rf_lost_[0-9a-f]{10}$`)

// quickStartClaims are the README's commands, as written, with what their
// comments claim.
var quickStartClaims = map[string]claim{
	// The Kafka quick start.
	`go run ./cmd/executor send --tool demo.echo --key order-1 --args '{"amount":120,"currency":"EUR"}'`: {
		"status succeeded, was_replay false, result.call = 1", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 0 || r["status"] != "succeeded" || r["was_replay"] != false || call(r) != 1 {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor send --tool demo.echo --key order-1 --args '{"currency":"EUR","amount":120.0}'`: {
		"a replay, result.call still 1", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 0 || r["status"] != "succeeded" || r["was_replay"] != true || call(r) != 1 {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor send --tool demo.echo --key order-1 --args '{"amount":121,"currency":"EUR"}'`: {
		"conflict (exit status 5), nothing is called", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 5 || r["status"] != "conflict" {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor send --tool demo.ecoh --key order-2 --args '{"amount":1}'`: {
		`rejected (exit status 6), "did you mean demo.echo?"`, func(q *quickStart, t *testing.T, o, _ outcome) {
			r := o.json(t)
			e, _ := r["error"].(map[string]any)
			if o.code != 6 || r["status"] != "rejected" || e["code"] != "unknown_tool" || e["message"] != `tool "demo.ecoh" is not configured: did you mean demo.echo?` {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor send --tool demo.refund --key rf-1 --args '{"amount":5}' &`: {
		"two senders at once while the 300 ms refund runs: one call, both answered", nil}, // checked with the next
	`go run ./cmd/executor send --tool demo.refund --key rf-1 --args '{"amount":5}'`: {
		"", func(q *quickStart, t *testing.T, fg, bg outcome) {
			a, b := fg.json(t), bg.json(t)
			replays := []bool{a["was_replay"] == true, b["was_replay"] == true}
			if fg.code != 0 || bg.code != 0 || refundID(a) == "" || refundID(a) != refundID(b) || !slices.Contains(replays, true) || !slices.Contains(replays, false) {
				t.Errorf("two senders, one call:\n%s\n%s", fg, bg)
			}
			q.remember("rf-1", refundID(a))
		}},
	`go run ./cmd/executor send --tool demo.lost_reply --key page-1 --args '{}' --wait 3s`: {
		"status pending, exit status 7, and stderr says what that means and what happens next", func(q *quickStart, t *testing.T, o, _ outcome) {
			r := o.json(t)
			if o.code != 7 || r["status"] != "pending" || !strings.Contains(o.stderr, "page-1 is in doubt") || !strings.Contains(o.stderr, "It will not run again") {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor history --key order-1`: {
		"started, outcome, replayed, conflicted", func(q *quickStart, t *testing.T, o, _ outcome) {
			if evs, _ := o.events(t); o.code != 0 || !slices.Equal(evs, []string{"started", "outcome", "replayed", "conflicted"}) {
				t.Errorf("trail %v: %s", evs, o)
			}
		}},

	// The approval quick start.
	`go run ./cmd/executor send --tool demo.transfer --key tr-1 --args '{"amount":250,"to":"acct-42"}'`: {
		"", func(q *quickStart, t *testing.T, o, _ outcome) {
			// Twice in the block: its comment says which claim this is.
			r := o.json(t)
			e, _ := r["error"].(map[string]any)
			res, _ := r["result"].(map[string]any)
			switch {
			case strings.Contains(o.comment, "answered at once, status pending, error.code awaiting_approval, approval_until; nothing ran (exit status 9"):
				if o.code != 9 || r["status"] != "pending" || e["code"] != "awaiting_approval" || r["approval_until"] == nil ||
					!strings.Contains(o.stderr, "reconciler approve --key tr-1 --tenant default --reason TEXT") {
					t.Errorf("the request: %s", o)
				}
			case strings.Contains(o.comment, "the agent asks again with the same key and arguments: succeeded, the transfer_id"):
				if id, _ := res["transfer_id"].(string); o.code != 0 || r["status"] != "succeeded" || !strings.HasPrefix(id, "tr_") || res["amount"] != float64(250) {
					t.Errorf("after the approval: %s", o)
				}
			default:
				t.Errorf("demo.transfer tr-1 under a comment this test does not know: %s", o.comment)
			}
		}},
	`go run ./cmd/executor send --tool demo.transfer --key tr-1 --args '{"amount":9999,"to":"acct-666"}'`: {
		"conflict; an approval never covers other arguments", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 5 || r["status"] != "conflict" {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/reconciler approve --key tr-1 --reason "invoice 42 checked"`: {
		`the answer is "approved", and the transfer runs once`, func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 0 || r["status"] != "approved" ||
				!strings.Contains(o.stderr, `arguments (as the tool will receive them): {"amount":250,"to":"acct-42"}`) {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor history --key tr-1`: {
		"who approved it and why, and the digest of the arguments approved", func(q *quickStart, t *testing.T, o, _ outcome) {
			evs, all := o.events(t)
			if o.code != 0 || !slices.Equal(evs, []string{"awaiting_approval", "conflicted", "approved", "started", "outcome", "replayed"}) ||
				all[2]["reason"] != "invoice 42 checked" || all[2]["by"] == nil || all[2]["args_digest"] != all[0]["args_digest"] {
				t.Errorf("trail %v: %s", evs, o)
			}
		}},

	// The curl quick start (after TOKEN=$(cat data/gateway.token)).
	`curl -si http://127.0.0.1:8080/v1/tools/demo.echo/calls -H "Authorization: Bearer $TOKEN" -H 'Idempotency-Key: order-7' -d '{"amount":120,"currency":"EUR"}'`: {
		`200, Idempotent-Replayed: false, "status":"succeeded", "was_replay":false`, func(q *quickStart, t *testing.T, o, _ outcome) {
			resp, body := o.http(t)
			if resp.StatusCode != 200 || resp.Header.Get("Idempotent-Replayed") != "false" || !strings.Contains(body, `"status":"succeeded"`) || !strings.Contains(body, `"was_replay":false`) {
				t.Errorf("%s", o)
			}
			q.remember("order-7", body)
		}},
	`curl -si http://127.0.0.1:8080/v1/tools/demo.echo/calls -H "Authorization: Bearer $TOKEN" -H 'Idempotency-Key: order-7' -d '{"currency":"EUR","amount":120.0}'`: {
		"200, Idempotent-Replayed: true, the same result.call", func(q *quickStart, t *testing.T, o, _ outcome) {
			resp, body := o.http(t)
			var first, again map[string]any
			_ = json.Unmarshal([]byte(q.fact("order-7")), &first)
			_ = json.Unmarshal([]byte(body), &again)
			if resp.StatusCode != 200 || resp.Header.Get("Idempotent-Replayed") != "true" || call(again) != 1 || call(again) != call(first) {
				t.Errorf("%s", o)
			}
		}},
	`curl -si http://127.0.0.1:8080/v1/tools/demo.echo/calls -H "Authorization: Bearer $TOKEN" -H 'Idempotency-Key: order-7' -d '{"amount":121,"currency":"EUR"}'`: {
		`422, application/problem+json, "code":"args_mismatch"`, func(q *quickStart, t *testing.T, o, _ outcome) {
			resp, body := o.http(t)
			if resp.StatusCode != 422 || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"code":"args_mismatch"`) {
				t.Errorf("%s", o)
			}
		}},
	`curl -si http://127.0.0.1:8080/v1/tools/demo.lost_reply/calls -H "Authorization: Bearer $TOKEN" -H 'Idempotency-Key: page-9' -H 'Prefer: wait=2' -d '{"to":"oncall"}'`: {
		`after 2 s, 202 with "status":"pending", Location: /v1/tools/demo.lost_reply/calls/page-9 and Retry-After: 5`, func(q *quickStart, t *testing.T, o, _ outcome) {
			resp, body := o.http(t)
			if resp.StatusCode != 202 || resp.Header.Get("Location") != "/v1/tools/demo.lost_reply/calls/page-9" || resp.Header.Get("Retry-After") != "5" || !strings.Contains(body, `"status":"pending"`) {
				t.Errorf("%s", o)
			}
		}},
	`curl -s http://127.0.0.1:8080/v1/tools/demo.lost_reply/calls/page-9 -H "Authorization: Bearer $TOKEN"`: {
		"the key's current answer, read from the event log", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); r["key"] != "page-9" || r["status"] != "pending" {
				t.Errorf("%s", o)
			}
		}},
	`curl -s http://127.0.0.1:8080/v1/tools/demo.refund/calls -H "Authorization: Bearer $TOKEN" -H 'Idempotency-Key: rf-9' -d '{"amount":-5}'`: {
		`400, "code":"invalid_args", errors[].path "/amount"`, func(q *quickStart, t *testing.T, o, _ outcome) {
			var p struct {
				Status float64 `json:"status"`
				Code   string  `json:"code"`
				Errors []struct {
					Path string `json:"path"`
				} `json:"errors"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &p); err != nil || p.Status != 400 || p.Code != "invalid_args" || len(p.Errors) == 0 || p.Errors[0].Path != "/amount" {
				t.Errorf("%s", o)
			}
		}},
	`curl -s http://127.0.0.1:8080/v1/tools -H "Authorization: Bearer $TOKEN"`: {
		"the tools this token may call, with their schemas", func(q *quickStart, t *testing.T, o, _ outcome) {
			var list struct {
				Tools []struct {
					Name        string         `json:"name"`
					InputSchema map[string]any `json:"input_schema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &list); err != nil || len(list.Tools) != 5 || list.Tools[0].Name != "demo.echo" || list.Tools[0].InputSchema == nil {
				t.Errorf("%v: %s", err, o)
			}
		}},

	// A key from in doubt to settled.
	`go run ./cmd/executor send --tool demo.lost_refund --key refund-9 --args '{"amount":30}' --wait 3s`: {
		"status pending, exit status 7", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 7 || r["status"] != "pending" {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/reconciler pending`: {
		"", func(q *quickStart, t *testing.T, o, _ outcome) {
			// Twice in the block: its comment says which claim this is.
			row := pendingRow(o.stdout, "default/refund-9")
			switch {
			case strings.Contains(o.comment, "the keys in doubt: refund-9, unknown, state within_ttl"):
				if o.code != 0 || !strings.Contains(row, " unknown ") || !strings.Contains(row, " within_ttl ") {
					t.Errorf("refund-9 in doubt, within its TTL: %s", o)
				}
			case strings.Contains(o.comment, "refund-9 is not in doubt any more"):
				if o.code != 0 || row != "" {
					t.Errorf("refund-9 still in doubt: %s", o)
				}
			default:
				t.Errorf("reconciler pending under a comment this test does not know: %s", o.comment)
			}
		}},
	`go run ./cmd/executor send --tool demo.lost_refund --key refund-9 --args '{"amount":30}' --wait 30s`: {
		"the duplicate then prints status succeeded, was_replay true", func(q *quickStart, t *testing.T, o, _ outcome) {
			if r := o.json(t); o.code != 0 || r["status"] != "succeeded" || r["was_replay"] != true || !lostRefundID.MatchString(refundID(r)) {
				t.Errorf("%s", o)
			}
		}},
	`go run ./cmd/executor history --key refund-9`: {
		`started, outcome unknown, waiting (the duplicate), resolved by "reconciler"`, func(q *quickStart, t *testing.T, o, _ outcome) {
			evs, all := o.events(t)
			if o.code != 0 || !slices.Equal(evs, []string{"started", "outcome", "waiting", "resolved"}) ||
				all[1]["status"] != "unknown" || all[3]["by"] != "reconciler" || all[3]["reason"] != "retry of demo.lost_refund (native_key) answered succeeded" {
				t.Errorf("trail %v: %s", evs, o)
			}
		}},

	// The console's sign-in by a script.
	`curl -s -o /dev/null -w '%{http_code}\n' -c cookies.txt -X POST -H "Authorization: Bearer $(cat data/console.token)" http://127.0.0.1:9465/console/signin`: {
		"a session cookie in cookies.txt (303 to /console)", func(q *quickStart, t *testing.T, o, _ outcome) {
			if o.code != 0 || strings.TrimSpace(o.stdout) != "303" {
				t.Errorf("%s", o)
			}
		}},
	`curl -s -b cookies.txt http://127.0.0.1:9465/console | grep -o '<title>.*</title>'`: {
		"<title>keys that need a person · toolexec console</title>", func(q *quickStart, t *testing.T, o, _ outcome) {
			if o.code != 0 || strings.TrimSpace(o.stdout) != "<title>keys that need a person · toolexec console</title>" {
				t.Errorf("%s", o)
			}
		}},
}

// pendingRow is the line of reconciler pending's table for key, "" if none.
func pendingRow(table, key string) string {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, key+" ") {
			return line
		}
	}
	return ""
}

// readmeCommand is one command of a README sh block (continuation lines
// joined), with the comment lines above it.
type readmeCommand struct {
	comment, line string
	background    bool // it ends in &: it runs alongside the next
	prelude       bool // an assignment the later commands of the block use
}

var assignment = regexp.MustCompile(`^[A-Z_]+=`)

// readmeBlock returns the commands of the n-th sh block (from 0) after
// the heading section of README.md.
func readmeBlock(t *testing.T, section string, n int) []readmeCommand {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+section+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", section)
	}
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	blocks := strings.Split(rest, "```sh\n")
	if len(blocks) <= n+1 {
		t.Fatalf("README.md %s has no sh block %d", section, n)
	}
	body, _, _ := strings.Cut(blocks[n+1], "```")
	var cmds []readmeCommand
	var comment, line string
	for _, l := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(l, "#"):
			comment += strings.TrimSpace(strings.TrimPrefix(l, "#")) + " "
		case strings.HasSuffix(l, "\\"):
			line += strings.TrimSuffix(l, "\\")
		case strings.TrimSpace(l) != "":
			line = strings.Join(strings.Fields(line+l), " ")
			cmds = append(cmds, readmeCommand{comment: comment, line: line, background: strings.HasSuffix(line, " &"), prelude: assignment.MatchString(line)})
			comment, line = "", ""
		}
	}
	return cmds
}

// buildReconciler builds cmd/reconciler for the README's commands.
func buildReconciler(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reconciler")
	if out, err := exec.Command("go", "build", "-o", path, "../../cmd/reconciler").CombinedOutput(); err != nil {
		t.Fatalf("build reconciler: %v\n%s", err, out)
	}
	return path
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
