package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

func approveForm(csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "tenant": {"acme"}, "key": {"k-9"}, "call_id": {"i-9"}, "args_digest": {"abcd"},
		"type": {wire.TypeApprove}, "reason": {"invoice checked"}}
}

// TestApprovalsPageAndForms: the list shows the key awaiting approval with
// its arguments as the tool will receive them; its page offers approve and
// deny to an approver (alice, of group payments), whose approve is sent
// bound to the request and its digest, under her name.
func TestApprovalsPageAndForms(t *testing.T) {
	w := newWorld(t)
	c := w.browser()
	csrf := w.signIn(c, aliceToken)
	list := w.do(c, "GET", "/console/approvals", nil)
	for _, want := range []string{`data-key="k-9"`, "t.wire", `&#34;amount&#34;: 120`, "group:payments", "abcd"} {
		if !strings.Contains(list.body, want) {
			t.Fatalf("the approvals page lacks %q:\n%s", want, list.body)
		}
	}
	key := w.do(c, "GET", "/console/key?tenant=acme&key=k-9", nil)
	for _, want := range []string{`id="request"`, `data-action="approve-"`, `data-action="deny-"`, `name="args_digest" value="abcd"`, `name="call_id" value="i-9"`} {
		if !strings.Contains(key.body, want) {
			t.Fatalf("the key page lacks %q:\n%s", want, key.body)
		}
	}
	f := approveForm(csrf)
	f.Del("reason")
	if p := w.do(c, "POST", "/console/key", f); p.status != http.StatusBadRequest || !strings.Contains(p.body, "say why") {
		t.Fatalf("an approve without a reason: %d\n%s", p.status, p.body)
	}
	w.b.answer = &wire.Result{Status: codes.StatusApproved}
	p := w.do(c, "POST", "/console/key", approveForm(csrf))
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "done=op-console-") { // the page finds the command in the log
		t.Fatalf("approve: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	sent := w.b.sends()
	if len(sent) != 1 || sent[0].Type != wire.TypeApprove || sent[0].By != "alice" || sent[0].CallID != "i-9" || sent[0].ArgsDigest != "abcd" ||
		sent[0].Reason != "invoice checked" {
		t.Fatalf("sent %+v", sent)
	}
}

// TestOnlyApproversDecide: bob is an operator but not of group payments:
// the page offers him nothing, and a forged form or an API call of his is
// refused before anything is sent.
func TestOnlyApproversDecide(t *testing.T) {
	w := newWorld(t)
	w.writeOperators(map[string]string{"alice": aliceToken, "bob": bobToken})
	if err := w.ops.Reload(); err != nil {
		t.Fatal(err)
	}
	c := w.browser()
	csrf := w.signIn(c, bobToken)
	key := w.do(c, "GET", "/console/key?tenant=acme&key=k-9", nil)
	if !strings.Contains(key.body, `id="not-approver"`) || strings.Contains(key.body, `data-action="approve-"`) {
		t.Fatalf("bob's page of k-9:\n%s", key.body)
	}
	if p := w.do(c, "POST", "/console/key", approveForm(csrf)); p.status != http.StatusForbidden || !strings.Contains(p.body, "not among the tool") {
		t.Fatalf("bob's approve: %d\n%s", p.status, p.body)
	}
	body := `{"tenant":"acme","key":"k-9","decision":"approve","reason":"ok","call_id":"i-9","args_digest":"abcd"}`
	if p := w.api("POST", "/console/api/approvals", bobToken, body); p.status != http.StatusForbidden {
		t.Fatalf("bob's API approve: %d %s", p.status, p.body)
	}
	if n := len(w.b.sends()); n != 0 {
		t.Fatalf("%d commands sent for a non-approver", n)
	}
}

// TestApprovalsAPI: a bearer token lists the keys awaiting approval with
// what a decision must name, and decides one; a session cookie, a missing
// binding or an unknown field is refused.
func TestApprovalsAPI(t *testing.T) {
	w := newWorld(t)
	if p := w.api("GET", "/console/api/approvals", "", ""); p.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", p.status)
	}
	p := w.api("GET", "/console/api/approvals", aliceToken, "")
	var list struct {
		Approvals []struct {
			Key, CallID, ArgsDigest string
			MayDecide               bool `json:"may_decide"`
			Args                    map[string]any
		} `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(p.body), &list); err != nil || len(list.Approvals) != 1 {
		t.Fatalf("list: %d %s (%v)", p.status, p.body, err)
	}
	if a := list.Approvals[0]; a.Key != "k-9" || !a.MayDecide || a.Args["amount"] != float64(120) || !strings.Contains(p.body, `"args_digest":"abcd"`) {
		t.Fatalf("item %+v in %s", a, p.body)
	}
	for body, want := range map[string]int{
		`{"tenant":"acme","key":"k-9","decision":"approve","reason":"ok"}`:                                                 http.StatusBadRequest,
		`{"tenant":"acme","key":"k-9","decision":"maybe","reason":"ok","call_id":"i-9","args_digest":"abcd"}`:              http.StatusBadRequest,
		`{"tenant":"acme","key":"k-9","decision":"deny","call_id":"i-9","args_digest":"abcd"}`:                             http.StatusBadRequest,
		`{"tenant":"acme","key":"k-9","decision":"deny","reason":"x","call_id":"i-9","args_digest":"abcd","by":"mallory"}`: http.StatusBadRequest,
		`{"tenant":"acme","key":"k-1","decision":"deny","reason":"x","call_id":"i-1","args_digest":"abcd"}`:                http.StatusConflict,
	} {
		if p := w.api("POST", "/console/api/approvals", aliceToken, body); p.status != want {
			t.Errorf("%s: %d %s, want %d", body, p.status, p.body, want)
		}
	}
	if n := len(w.b.sends()); n != 0 {
		t.Fatalf("%d commands sent for refused decisions", n)
	}
	w.b.answer = &wire.Result{Status: codes.StatusDenied}
	p = w.api("POST", "/console/api/approvals", aliceToken, `{"tenant":"acme","key":"k-9","decision":"deny","reason":"wrong account","call_id":"i-9","args_digest":"abcd"}`)
	if p.status != http.StatusOK || !strings.Contains(p.body, `"status":"denied"`) {
		t.Fatalf("deny: %d %s", p.status, p.body)
	}
	if sent := w.b.sends(); len(sent) != 1 || sent[0].Type != wire.TypeDeny || sent[0].By != "alice" || sent[0].Reason != "wrong account" {
		t.Fatalf("sent %+v", sent)
	}
	c := w.browser()
	w.signIn(c, aliceToken)
	if p := w.do(c, "GET", "/console/api/approvals", nil); p.status != http.StatusUnauthorized {
		t.Fatalf("the API with a session cookie: %d", p.status)
	}
}

// api calls the JSON API with a bearer token ("" for none).
func (w *world) api(method, path, token, body string) page {
	w.t.Helper()
	req, err := http.NewRequest(method, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b := new(strings.Builder)
	_, _ = io.Copy(b, resp.Body)
	return page{status: resp.StatusCode, body: b.String(), header: resp.Header}
}
