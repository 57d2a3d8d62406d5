package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// chromiumPath finds Debian's chromium (CHROMIUM overrides); "" when none
// is installed.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts a headless chromium with a fresh profile and nothing it
// would reach for on the network (the machine may be offline).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("chromium is not installed: the console's browser test needs it (apt-get install chromium; .ci/run installs it)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1360, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser; it must not run under a
	// timeout, which would stop the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	return ctx
}

// inBrowser runs browser actions with a bound, failing the test with what.
func inBrowser(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// read runs one browser action that reads a value.
func read[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// screenshot saves the page as PNG into $CONSOLE_SCREENSHOTS (the docs'
// pictures are made so: CONSOLE_SCREENSHOTS=$PWD/docs), when it is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png := read(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The operator's whole path in a real browser: an executor killed after
// an irreversible tool acted leaves its key in doubt, the reconciler
// escalates it; the operator signs in, finds the key, reads its timeline,
// resolves it, sees it leave the list, and `executor history` names them.
func TestConsoleInBrowser(t *testing.T) {
	e := newEnv(t, 2)
	ctx := browser(t)
	fx := newEffects(t)
	yaml := fx.toolsYAML()
	res := e.collect(e.names.Results)

	key := "pay-" + randHex(3)
	a := e.startProc(yaml, "", "TOOLEXEC_FAULT=after_call:exit:"+key)
	in := wire.Intent{Tool: "r.irrev", Key: key, Args: map[string]any{"page": "oncall"}}
	first := e.send(in)
	a.exited(t, 60*time.Second)
	if n := fx.effectsOf("/plain", "default", key); n != 1 {
		t.Fatalf("effects before the crash %d, want 1", n)
	}
	e.startProc(yaml, "")
	dup := e.send(in)
	waitPending(t, res, dup, 60*time.Second)
	// A native_key call whose answer is lost: its unknown outcome is one of
	// the tool's last errors (the reconciler then retries it).
	lost := e.send(wire.Intent{Tool: "r.native", Key: "nk-" + randHex(3), Args: map[string]any{"amount": 3}})
	waitPending(t, res, lost, 60*time.Second)

	opsFile := filepath.Join(t.TempDir(), "operators.yaml")
	const token = "op-alice-browser-token"
	if err := os.WriteFile(opsFile, []byte("operators:\n  - name: alice\n    tokens: [\""+tokenfile.HashToken(token)+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rp := e.startReconcilerProc(yaml, t.TempDir(), "--operators", opsFile)
	base := "http://" + rp.http

	inBrowser(t, ctx, "sign in", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("operator")))
	if where := read(t, ctx, "location", chromedp.Location()); !strings.HasSuffix(where, "/console") {
		t.Fatalf("after sign-in the browser is at %s", where)
	}
	row := fmt.Sprintf(`tr[data-key=%q]`, key)
	waitInBrowser(t, ctx, 60*time.Second, "the escalated key in the list", base+"/console", func(c context.Context) bool {
		state, err := chromedp.Run(c, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, row+" .state")))
		return err == nil && state == "escalated"
	})
	if n := read(t, ctx, "read the counts", chromedp.Text(chromedp.ID("count-escalated"))); n != "1" {
		t.Fatalf("the list counts %s escalated keys, want 1", n)
	}
	screenshot(t, ctx, "console-keys.png")
	waitInBrowser(t, ctx, 30*time.Second, "r.native's lost answer among its last errors", base+"/console/tools", func(c context.Context) bool {
		text, err := chromedp.Run(c, chromedp.Evaluate[string](`(document.getElementById("tool-r.native") || {innerText: ""}).innerText`))
		return err == nil && strings.Contains(text, "outcome unknown")
	})
	screenshot(t, ctx, "console-tools.png")
	inBrowser(t, ctx, "back to the list", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.ID("keys")))

	inBrowser(t, ctx, "open the key", chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.ID("timeline")))
	timeline := read(t, ctx, "read the timeline", chromedp.Text(chromedp.ID("timeline")))
	dk := read(t, ctx, "read the downstream key", chromedp.Text(chromedp.ID("downstream-key")))
	for _, want := range []string{"started", "waiting", first, dup} {
		if !strings.Contains(timeline, want) {
			t.Fatalf("the timeline lacks %q:\n%s", want, timeline)
		}
	}
	if dks := fx.downstreamKeys("/plain", "default", key); len(dks) != 1 || dks[0] != dk {
		t.Fatalf("the page shows downstream key %q, the tool saw %v", dk, dks)
	}
	screenshot(t, ctx, "console-key.png")

	form := `form[data-action="resolve-succeeded"]`
	inBrowser(t, ctx, "resolve the key", chromedp.SendKeys(chromedp.CSS(form+` textarea[name=result]`), `{"paged": "oncall", "seen_in": "pager log"}`),
		chromedp.SendKeys(chromedp.CSS(form+` input[name=reason]`), "the pager's log shows the page went out"),
		chromedp.Click(chromedp.CSS(form+` button`)), chromedp.WaitVisible(chromedp.ID("notice")))
	if status := read(t, ctx, "read the status", chromedp.Text(chromedp.ID("status"))); status != "succeeded" {
		t.Fatalf("after the resolve the key is %s", status)
	}
	for _, id := range []string{first, dup} {
		if got := res.waitResult(t, id, 30*time.Second); got.Status != codes.StatusSucceeded || !strings.Contains(fmt.Sprint(got.Result), "pager log") {
			t.Fatalf("the answer to %s: %+v", id, got)
		}
	}
	waitInBrowser(t, ctx, 30*time.Second, "the key gone from the list", base+"/console", func(c context.Context) bool {
		n, err := chromedp.Run(c, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, row)))
		return err == nil && n == 0
	})

	ev := settledBy(t, e, key, saga.EvResolved, "alice")
	if ev.Reason != "the pager's log shows the page went out" {
		t.Fatalf("the resolve's reason %q", ev.Reason)
	}
	out, err := exec.Command(binary, "history", "--brokers", brokers[0], "--topic-prefix", e.prefix, "--key", key).CombinedOutput()
	if err != nil || !regexp.MustCompile(`"by":\s*"alice"`).Match(out) {
		t.Fatalf("executor history (%v) does not name the operator:\n%s", err, out)
	}
	if n := fx.effectsOf("/plain", "default", key); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
}

// waitInBrowser loads url until ok holds on the page.
func waitInBrowser(t *testing.T, ctx context.Context, within time.Duration, what, url string, ok func(context.Context) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		inBrowser(t, ctx, "load "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
		if ok(ctx) {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
			t.Fatalf("no %s within %s; the page:\n%s", what, within, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
