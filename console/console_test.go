package console

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// fakeBackend is a reconciler with one escalated key, k-1 of t.irrev, and
// the answers a resolve gets. It records what was sent.
type fakeBackend struct {
	now    time.Time
	mu     sync.Mutex
	sent   []reconciler.ResolveRequest
	answer *wire.Result
	err    error
	more   []*saga.Event // after k-1's history
}

func (b *fakeBackend) t0() int64 { return b.now.Add(-10 * time.Minute).UnixMilli() }

func (b *fakeBackend) Rows() []reconciler.Row {
	return []reconciler.Row{
		{Tenant: "acme", Key: "k-1", Tool: "t.irrev", Class: "irreversible", Phase: "call", Status: "unknown", CallID: "i-1",
			DownstreamKey: "dk-1", CalledAt: b.t0(), Deadline: b.t0() + 3000, Waiters: 2, State: "escalated", Attempts: 0,
			Reason: "irreversible: an operator must settle it", Investigated: true},
		{Tenant: "acme", Key: "k-2", Tool: "t.native", Class: "native_key", Phase: "call", Status: "unknown", CallID: "i-2",
			CalledAt: b.now.Add(-time.Second).UnixMilli(), Deadline: b.now.Add(time.Minute).UnixMilli(), State: stateWithinTTL},
		{Tenant: "globex", Key: "k-3", Tool: "t.native", Class: "native_key", Phase: "call", Status: "started", CallID: "i-3",
			CalledAt: b.now.Add(-2 * time.Minute).UnixMilli(), Deadline: b.now.Add(-time.Minute).UnixMilli(), State: "retry", Attempts: 2,
			Reason: "retry: http_503"},
	}
}
func (b *fakeBackend) Approvals() []reconciler.ApprovalRow {
	return []reconciler.ApprovalRow{reconciler.RowOfRequest(saga.Apply(nil, *b.request()))}
}
func (b *fakeBackend) Coverage() ([]int32, int32)               { return []int32{0, 1}, 2 }
func (b *fakeBackend) Started() map[string]int                  { return map[string]int{"t.native": 1} }
func (b *fakeBackend) ToolErrors(string) []reconciler.ToolError { return nil }
func (b *fakeBackend) Specs() []tools.Spec {
	return []tools.Spec{{Name: "t.irrev", Class: tools.Irreversible, URL: "http://user:pw@tool/x?secret=1", Timeout: time.Second, PendingTTL: 3 * time.Second},
		{Name: "t.native", Class: tools.NativeKey, URL: "http://tool/n", Timeout: time.Second, PendingTTL: time.Minute},
		{Name: "t.wire", Class: tools.NativeKey, URL: "http://tool/w", Timeout: time.Second, PendingTTL: time.Minute,
			Approval: tools.ApprovalRequired, Approvers: []string{"group:payments"}}}
}

// request is the event of acme/k-9, a call of t.wire awaiting approval.
func (b *fakeBackend) request() *saga.Event {
	return &saga.Event{Kind: saga.EvAwaitingApproval, Tenant: "acme", Key: "k-9", At: b.t0(), IntentID: "i-9", Tool: "t.wire",
		ArgsHash: []byte{0xab, 0xcd}, Args: []byte{0x81, 0xa6, 'a', 'm', 'o', 'u', 'n', 't', 0x78}, RetentionMs: 3600_000, Attempt: 1,
		Waiter: &saga.Waiter{IntentID: "i-9"}, ApprovalUntil: b.t0() + 3600_000, Approvers: "group:payments"}
}

func (b *fakeBackend) History(_ context.Context, tenant, key string) ([]*saga.Event, error) {
	if tenant == "acme" && key == "k-9" {
		return []*saga.Event{b.request()}, nil
	}
	if tenant != "acme" || key != "k-1" {
		return nil, nil
	}
	w := &saga.Waiter{IntentID: "i-1"}
	return append([]*saga.Event{
		{Kind: saga.EvStarted, Tenant: tenant, Key: key, At: b.t0(), IntentID: "i-1", Tool: "t.irrev", PendingTTL: 3000,
			RetentionMs: 3600_000, Attempt: 1, DownstreamKey: "dk-1", Waiter: w},
		{Kind: saga.EvOutcome, Tenant: tenant, Key: key, At: b.t0() + 1000, CallID: "i-1", Status: saga.StatusUnknown,
			Err: &saga.Error{Code: "timeout", Message: "no answer in 1s"}},
		{Kind: saga.EvWaiting, Tenant: tenant, Key: key, At: b.t0() + 2000, IntentID: "i-dup", Waiter: &saga.Waiter{IntentID: "i-dup"}},
	}, b.more...), nil
}

func (b *fakeBackend) Send(_ context.Context, req reconciler.ResolveRequest) (*wire.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, req)
	if b.answer != nil || b.err != nil {
		return b.answer, b.err
	}
	return &wire.Result{IntentID: req.ID, Status: codes.StatusResolved}, nil
}

func (b *fakeBackend) sends() []reconciler.ResolveRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]reconciler.ResolveRequest(nil), b.sent...)
}

// world is a console on a test server with an operators file holding
// alice's token.
type world struct {
	t     *testing.T
	srv   *httptest.Server
	b     *fakeBackend
	ops   *OperatorStore
	path  string
	proxy bool // requests say they came through a TLS proxy
}

const aliceToken, bobToken, tenantToken = "op-alice-secret", "op-bob-secret", "tx_tenant-secret"

func operatorsYAML(entries map[string]string) string {
	s := "operators:\n"
	for name, tok := range entries {
		s += "  - name: " + name + "\n    tokens: [\"" + tokenfile.HashToken(tok) + "\"]\n"
		if name == "alice" {
			s += "    groups: [payments]\n"
		}
	}
	return s
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, b: &fakeBackend{now: time.Now()}, path: filepath.Join(t.TempDir(), "operators.yaml")}
	w.writeOperators(map[string]string{"alice": aliceToken})
	ops, err := NewOperatorStore(w.path)
	if err != nil {
		t.Fatal(err)
	}
	w.ops = ops
	c, err := New(Config{Operators: ops, Backend: w.b, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return w.b.now }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *world) writeOperators(entries map[string]string) {
	w.t.Helper()
	if err := os.WriteFile(w.path, []byte(operatorsYAML(entries)), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// browser is a client with a cookie jar that does not follow redirects.
func (w *world) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (w *world) do(c *http.Client, method, path string, form url.Values, headers ...string) page {
	w.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, w.srv.URL+path, body)
	if err != nil {
		w.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if w.proxy {
		req.Header.Set("X-Forwarded-Proto", "https")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, body: string(b), header: resp.Header}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no csrf field in the page:\n%s", p.body)
	}
	return m[1]
}

// signIn signs c in with token and returns the session's CSRF token (from
// the page it lands on).
func (w *world) signIn(c *http.Client, token string) string {
	w.t.Helper()
	form := w.do(c, "GET", "/console/signin?next=/console", nil)
	p := w.do(c, "POST", "/console/signin", url.Values{"csrf": {csrfOf(w.t, form)}, "token": {token}, "next": {"/console"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console" {
		w.t.Fatalf("sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	return csrfOf(w.t, w.do(c, "GET", "/console", nil))
}

func resolveForm(csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "tenant": {"acme"}, "key": {"k-1"}, "call_id": {"i-1"}, "type": {wire.TypeResolve},
		"outcome": {codes.StatusSucceeded}, "result": {`{"seen": true}`}, "reason": {"found in the tool's log"}}
}

// No page and no action without a session: pages send a browser to sign
// in, actions are refused, and nothing reaches the executor.
func TestNothingWithoutASession(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	for _, path := range []string{"/console", "/console/tools", "/console/key?tenant=acme&key=k-1"} {
		p := w.do(c, "GET", path, nil)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/signin?next=") {
			t.Fatalf("GET %s without a session: %d %s", path, p.status, p.header.Get("Location"))
		}
		if strings.Contains(p.body, "data-key") || strings.Contains(p.body, "dk-1") || strings.Contains(p.body, "t.irrev") {
			t.Fatalf("GET %s without a session shows a key:\n%s", path, p.body)
		}
	}
	for _, path := range []string{"/console/key", "/console/signout"} {
		if p := w.do(c, "POST", path, resolveForm("x")); p.status != http.StatusUnauthorized {
			t.Fatalf("POST %s without a session: %d", path, p.status)
		}
	}
	if n := len(w.b.sends()); n != 0 {
		t.Fatalf("%d commands sent without a session", n)
	}
}

// A session's form must carry the session's CSRF token: missing or forged,
// the action is refused and nothing is sent; with it, the command is sent
// under the operator's name.
func TestForgedOrMissingCSRFIsRefused(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	csrf := w.signIn(c, aliceToken)
	for name, token := range map[string]string{"missing": "", "forged": "AAAA" + csrf[4:], "another session's": w.signIn(w.browser(), aliceToken)} {
		f := resolveForm(token)
		if token == "" {
			f.Del("csrf")
		}
		if p := w.do(c, "POST", "/console/key", f); p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
			t.Fatalf("%s CSRF token: %d\n%s", name, p.status, p.body)
		}
	}
	if n := len(w.b.sends()); n != 0 {
		t.Fatalf("%d commands sent with a bad CSRF token", n)
	}
	p := w.do(c, "POST", "/console/key", resolveForm(csrf))
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "done=op-console-") {
		t.Fatalf("a good action: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	sent := w.b.sends()
	if len(sent) != 1 || sent[0].By != "alice" || sent[0].Outcome != "succeeded" || sent[0].CallID != "i-1" || sent[0].Reason != "found in the tool's log" {
		t.Fatalf("sent %+v", sent)
	}
	// The sign-in form has its own CSRF value: a sign-in posted from
	// elsewhere (no cookie) is refused.
	if p := w.do(w.browser(), "POST", "/console/signin", url.Values{"csrf": {"x"}, "token": {aliceToken}}); p.status != http.StatusForbidden {
		t.Fatalf("a sign-in without its form's cookie: %d", p.status)
	}
}

// A tenant's gateway token is not an operator's, as a bearer token or at
// sign-in; an operator's bearer token works without a CSRF token.
func TestTenantTokenIsNotAnOperatorToken(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	if p := w.do(c, "GET", "/console", nil, "Authorization", "Bearer "+tenantToken); p.status != http.StatusUnauthorized || p.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("a tenant's token as bearer: %d", p.status)
	}
	if p := w.do(c, "POST", "/console/key", resolveForm(""), "Authorization", "Bearer "+tenantToken); p.status != http.StatusUnauthorized {
		t.Fatalf("an action with a tenant's token: %d", p.status)
	}
	form := w.do(c, "GET", "/console/signin", nil)
	if p := w.do(c, "POST", "/console/signin", url.Values{"csrf": {csrfOf(t, form)}, "token": {tenantToken}}); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "no operator") {
		t.Fatalf("sign-in with a tenant's token: %d\n%s", p.status, p.body)
	}
	if p := w.do(c, "GET", "/console", nil, "Authorization", "Bearer "+aliceToken); p.status != http.StatusOK || !strings.Contains(p.body, "k-1") {
		t.Fatalf("an operator's bearer token: %d", p.status)
	}
	if p := w.do(c, "POST", "/console/key", resolveForm(""), "Authorization", "Bearer "+aliceToken); p.status != http.StatusSeeOther {
		t.Fatalf("an action with an operator's bearer token: %d\n%s", p.status, p.body)
	}
	if sent := w.b.sends(); len(sent) != 1 || sent[0].By != "alice" {
		t.Fatalf("sent %+v", sent)
	}
}

// An operators file rotated and reloaded on SIGHUP ends the sessions of
// the tokens it dropped at their next request; the new token signs in.
func TestSIGHUPRotationEndsOldSessions(t *testing.T) {
	w := newWorld(t)
	stop := w.ops.ReloadOnSignal(slog.New(slog.NewTextHandler(io.Discard, nil)), syscall.SIGHUP)
	defer stop()
	old, kept := w.browser(), w.browser()
	w.writeOperators(map[string]string{"alice": aliceToken, "bob": bobToken})
	w.reload(syscall.SIGHUP, func() bool { return w.ops.Current().Has("bob") })
	csrfOld := w.signIn(old, aliceToken)
	w.signIn(kept, bobToken)

	w.writeOperators(map[string]string{"alice": "op-alice-rotated", "bob": bobToken})
	w.reload(syscall.SIGHUP, func() bool { _, _, ok := w.ops.Current().Lookup(aliceToken); return !ok })
	p := w.do(old, "GET", "/console", nil)
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "ended=1") {
		t.Fatalf("the rotated-out token's session: %d %s", p.status, p.header.Get("Location"))
	}
	if p := w.do(old, "POST", "/console/key", resolveForm(csrfOld)); p.status != http.StatusUnauthorized {
		t.Fatalf("an action of the ended session: %d", p.status)
	}
	if p := w.do(kept, "GET", "/console", nil); p.status != http.StatusOK {
		t.Fatalf("a session of a token still listed: %d", p.status)
	}
	w.signIn(w.browser(), "op-alice-rotated")
	if n := len(w.b.sends()); n != 0 {
		t.Fatalf("%d commands sent by an ended session", n)
	}
}

// reload sends sig to this process and waits until done holds.
func (w *world) reload(sig syscall.Signal, done func() bool) {
	w.t.Helper()
	if err := syscall.Kill(os.Getpid(), sig); err != nil {
		w.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			w.t.Fatal("the operators file was not reloaded on SIGHUP")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The session cookie is HttpOnly and SameSite=Strict, and Secure behind a
// TLS proxy.
func TestSessionCookieAttributes(t *testing.T) {
	w := newWorld(t)
	w.proxy = true
	c := w.browser()
	form := w.do(c, "GET", "/console/signin", nil)
	p := w.do(c, "POST", "/console/signin", url.Values{"csrf": {csrfOf(t, form)}, "token": {aliceToken}})
	var ck string
	for _, v := range p.header.Values("Set-Cookie") {
		if strings.HasPrefix(v, sessionCookie+"=") {
			ck = v
		}
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Secure", "Path=/console"} {
		if !strings.Contains(ck, want) {
			t.Fatalf("session cookie %q lacks %s", ck, want)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("CSP %q", csp)
	}
}

// The list shows the keys that need a person, with counts over every row
// (the gauges' sums), and filters.
func TestListCountsAndFilters(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	w.signIn(c, aliceToken)
	p := w.do(c, "GET", "/console", nil)
	for _, want := range []string{`id="count-in-doubt">2<`, `id="count-escalated">1<`, `data-key="k-1"`, `data-key="k-3"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("list lacks %s:\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, `data-key="k-2"`) {
		t.Fatal("a key within its pending_ttl is listed as needing a person")
	}
	cases := map[string][]string{
		"/console?state=escalated":      {"k-1"},
		"/console?tenant=globex":        {"k-3"},
		"/console?tool=t.irrev&age=5m":  {"k-1"},
		"/console?age=5m&tenant=globex": nil,
		"/console?state=within_ttl":     {"k-2"},
	}
	for path, want := range cases {
		body := w.do(c, "GET", path, nil).body
		got := regexp.MustCompile(`data-key="([^"]+)"`).FindAllStringSubmatch(body, -1)
		var keys []string
		for _, m := range got {
			keys = append(keys, m[1])
		}
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("%s lists %v, want %v", path, keys, want)
		}
	}
}

// The key page shows the timeline, the downstream key and the actions of
// a call in doubt; the tools page shows settings without secrets.
func TestKeyAndToolPages(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	w.signIn(c, aliceToken)
	p := w.do(c, "GET", "/console/key?tenant=acme&key=k-1", nil)
	for _, want := range []string{`id="downstream-key">dk-1<`, "timeout: no answer in 1s", "i-dup", "Resolve: succeeded", "Resolve: not executed",
		"the key is free"} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("key page lacks %q:\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, "still-lands") || strings.Contains(p.body, "Compensate") {
		t.Fatal("a key past its pending_ttl of an irreversible tool offers force or compensate")
	}
	if p := w.do(c, "GET", "/console/key?tenant=acme&key=nope", nil); p.status != http.StatusNotFound {
		t.Fatalf("an unknown key: %d", p.status)
	}
	tp := w.do(c, "GET", "/console/tools", nil)
	if !strings.Contains(tp.body, "http://tool/x") || strings.Contains(tp.body, "pw@") || strings.Contains(tp.body, "secret=1") {
		t.Fatalf("tools page shows a secret or no URL:\n%s", tp.body)
	}
}

// A refusal says why, and what to do about a call that may still land.
func TestActionRefusalSaysWhy(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	csrf := w.signIn(c, aliceToken)
	w.b.answer = &wire.Result{Status: codes.StatusRejected, Error: &wire.ErrorInfo{Code: codes.ReasonInvalidCommand, Message: "the call may still reach its tool (for 2m more)", Refusal: codes.RefusalMayStillLand}}
	w.b.err = reconciler.ErrRejected
	p := w.do(c, "POST", "/console/key", resolveForm(csrf))
	if p.status != http.StatusConflict || !strings.Contains(p.body, "force") || !strings.Contains(p.body, `id="refusal"`) {
		t.Fatalf("a refused action: %d\n%s", p.status, p.body)
	}
	f := resolveForm(csrf)
	f.Set("reason", "  ")
	if p := w.do(c, "POST", "/console/key", f); p.status != http.StatusBadRequest || !strings.Contains(p.body, "say why") {
		t.Fatalf("an action without a reason: %d", p.status)
	}
}

// Without an operators file the console is off and says how to turn it on.
func TestConsoleOff(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	for _, path := range []string{"/console", "/console/key?tenant=a&key=b"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "--operators") {
			t.Fatalf("%s with the console off: %d\n%s", path, rec.Code, rec.Body)
		}
	}
}

// The notice after an action comes from the key's event log: a link that
// names a result, an operator and an action in its query shows none of
// them; the page a real action leads to shows what the log recorded.
func TestNoticeComesFromTheLog(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	w.signIn(c, aliceToken)
	forged := "/console/key?" + url.Values{"tenant": {"acme"}, "key": {"k-1"}, "done": {"succeeded"}, "by": {"mallory"},
		"action": {"resolve succeeded"}}.Encode()
	p := w.do(c, "GET", forged, nil)
	if notice := noticeOf(p.body); p.status != http.StatusOK || strings.Contains(notice, "mallory") || strings.Contains(notice, "succeeded") {
		t.Fatalf("a forged notice is shown: %d %q", p.status, notice)
	}
	w.b.more = []*saga.Event{{Kind: saga.EvResolved, Tenant: "acme", Key: "k-1", At: w.b.t0() + 5000, IntentID: "op-console-1",
		CallID: "i-1", Status: saga.StatusSucceeded, By: "alice", Reason: "found in the tool's log"}}
	p = w.do(c, "GET", "/console/key?"+url.Values{"tenant": {"acme"}, "key": {"k-1"}, "done": {"op-console-1"}}.Encode(), nil)
	if notice := noticeOf(p.body); notice != "Recorded: Resolved succeeded by alice: found in the tool&#39;s log" {
		t.Fatalf("the notice of a recorded command: %q", notice)
	}
}

var noticeP = regexp.MustCompile(`<p class="notice" id="notice">([^<]*)</p>`)

// noticeOf is the page's notice, "" when it has none.
func noticeOf(body string) string {
	if m := noticeP.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

// /pending (every tenant's keys in doubt, with their downstream keys) is
// served to operators only: without a credential, or with a tenant's
// token, it is 401; with an operator's token it lists the rows.
func TestPendingIsForOperators(t *testing.T) {
	w := newWorld(t)
	for name, headers := range map[string][]string{"no credential": nil, "a tenant's token": {"Authorization", "Bearer " + tenantToken}} {
		if p := w.do(http.DefaultClient, "GET", "/pending", nil, headers...); p.status != http.StatusUnauthorized || strings.Contains(p.body, "dk-1") {
			t.Fatalf("%s: %d\n%s", name, p.status, p.body)
		}
	}
	p := w.do(http.DefaultClient, "GET", "/pending", nil, "Authorization", "Bearer "+aliceToken)
	if p.status != http.StatusOK || !strings.Contains(p.body, `"downstream_key":"dk-1"`) {
		t.Fatalf("an operator's /pending: %d\n%s", p.status, p.body)
	}
}

// A script signs in with the operator's token as a bearer token, without
// the form's CSRF value, and gets a session cookie that alone opens the
// console (what a headless browser is handed); a token that is no
// operator's gets nothing.
func TestScriptSignsInWithABearerToken(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	p := w.do(c, "POST", "/console/signin?next=/console/tools", nil, "Authorization", "Bearer "+aliceToken)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/tools" {
		t.Fatalf("bearer sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if p := w.do(c, "GET", "/console", nil); p.status != http.StatusOK || !strings.Contains(p.body, "alice") {
		t.Fatalf("with the session cookie alone: %d\n%s", p.status, p.body)
	}
	other := w.browser()
	for _, h := range []string{"Bearer " + tenantToken, "Bearer nope", "Basic " + aliceToken} {
		if p := w.do(other, "POST", "/console/signin", nil, "Authorization", h); p.status != http.StatusUnauthorized {
			t.Errorf("%q: %d", h, p.status)
		}
	}
	if p := w.do(other, "GET", "/console", nil); p.status != http.StatusSeeOther {
		t.Fatalf("a refused sign-in left a session: %d", p.status)
	}
}
