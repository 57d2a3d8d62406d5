package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// TestApprovalInBrowser: an operator of the tool's approvers group signs
// in, finds the call awaiting approval with its arguments, approves it
// with a reason and sees it succeed; the agent's intent gets the outcome,
// the tool ran once, and the log names who approved and why.
func TestApprovalInBrowser(t *testing.T) {
	e := newEnv(t, 2)
	ctx := browser(t)
	l := newLedger(t)
	yaml := approvalTools(l)
	e.startProc(yaml, "")
	res := e.collect(e.names.Results)
	key := "wire-" + randHex(3)
	first := e.send(wire.Intent{Tool: "a.pay", Key: key, Args: map[string]any{"amount": 250, "to": "acct-42"}})
	if got := waitFirst(t, res, first, 60*time.Second); !got.AwaitingApproval() {
		t.Fatalf("the agent's answer: %+v", got)
	}

	opsFile := filepath.Join(t.TempDir(), "operators.yaml")
	const token = "op-carol-browser-token"
	ops := "operators:\n  - name: carol\n    tokens: [\"" + tokenfile.HashToken(token) + "\"]\n    groups: [payments]\n"
	if err := os.WriteFile(opsFile, []byte(ops), 0o600); err != nil {
		t.Fatal(err)
	}
	rp := e.startReconcilerProc(yaml, t.TempDir(), "--operators", opsFile)
	base := "http://" + rp.http
	inBrowser(t, ctx, "sign in", chromedp.Navigate(base+"/console/approvals"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("operator")))
	row := fmt.Sprintf(`tr[data-key=%q]`, key)
	waitInBrowser(t, ctx, 60*time.Second, "the call awaiting approval", base+"/console/approvals", func(c context.Context) bool {
		n, err := chromedp.Run(c, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, row)))
		return err == nil && n == 1
	})
	screenshot(t, ctx, "console-approvals.png")
	inBrowser(t, ctx, "open the key", chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.ID("request")))
	if args := read(t, ctx, "read the arguments", chromedp.Text(chromedp.ID("args"))); !strings.Contains(args, `"to": "acct-42"`) {
		t.Fatalf("the page shows the arguments %q", args)
	}
	if n := l.total(); n != 0 {
		t.Fatalf("%d tool requests before the approval", n)
	}
	form := `form[data-action="approve-"]`
	inBrowser(t, ctx, "approve with a reason", chromedp.SendKeys(chromedp.CSS(form+` input[name=reason]`), "invoice 42 checked with the customer"),
		chromedp.Click(chromedp.CSS(form+` button`)), chromedp.WaitVisible(chromedp.ID("notice")))
	waitInBrowser(t, ctx, 30*time.Second, "the call succeeded", base+"/console/key?tenant=default&key="+key, func(c context.Context) bool {
		status, err := chromedp.Run(c, chromedp.Text(chromedp.ID("status")))
		return err == nil && status == "succeeded"
	})
	screenshot(t, ctx, "console-approved.png")
	if got := res.waitResult(t, first, 30*time.Second); got.Status != codes.StatusSucceeded || got.WasReplay {
		t.Fatalf("the agent's final answer: %+v", got)
	}
	if n := l.total(); n != 1 {
		t.Fatalf("%d tool requests, want 1", n)
	}
	if ev := settledBy(t, e, key, saga.EvApproved, "carol"); ev.Reason != "invoice 42 checked with the customer" {
		t.Fatalf("the approved event %+v", ev)
	}
}
