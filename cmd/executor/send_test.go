package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// Every status an answer can have ends send with its own exit status, so
// that a script sees a conflict or a rejection without reading the JSON;
// stdout holds one JSON document whatever the answer.
func TestSendExitStatusPerAnswer(t *testing.T) {
	in := wire.Intent{Key: "k", Tool: "demo.echo"}
	for status, want := range map[string]int{
		codes.StatusSucceeded: 0, codes.StatusCompensated: 0, codes.StatusFailed: 3, codes.StatusCompensationFailed: 3,
		codes.StatusNotExecuted: 4, codes.StatusConflict: 5, codes.StatusRejected: 6,
	} {
		var out bytes.Buffer
		err := answer(&out, in, time.Second, &wire.Result{Key: "k", Status: status}, nil)
		if got := cli.Exit("executor", err); got != want {
			t.Errorf("%s: exit %d, want %d", status, got, want)
		}
		if n := documents(t, out.Bytes()); n != 1 {
			t.Errorf("%s: %d JSON documents on stdout", status, n)
		}
	}
}

// A key that awaits a person's approval prints its pending answer and
// exits 9 at once, saying how it is decided.
func TestSendAwaitingApproval(t *testing.T) {
	in := wire.Intent{Key: "tr-1", Tool: "demo.transfer", Tenant: "default"}
	pending := &wire.Result{Key: "tr-1", Tool: "demo.transfer", Status: codes.StatusPending, Error: &wire.ErrorInfo{Code: codes.ErrAwaitingApproval}}
	var out bytes.Buffer
	err := answer(&out, in, 3*time.Second, pending, client.ErrApprovalPending)
	var st *cli.ExitStatus
	if !errors.As(err, &st) || st.Code != exitAwaitingApproval || documents(t, out.Bytes()) != 1 ||
		!strings.Contains(err.Error(), "reconciler approve --key tr-1 --tenant default --reason TEXT") {
		t.Fatalf("awaiting approval: %v, stdout %q", err, out.String())
	}
}

// A key still in doubt when --wait ends prints its pending answer and
// exits 7 with what that means; no answer at all exits 8 and says the
// intent was sent.
func TestSendInDoubtAndNoAnswer(t *testing.T) {
	in := wire.Intent{Key: "page-1", Tool: "demo.lost_reply"}
	pending := &wire.Result{Key: "page-1", Tool: "demo.lost_reply", Status: codes.StatusPending, Error: &wire.ErrorInfo{Code: codes.ErrInDoubt}}
	var out bytes.Buffer
	err := answer(&out, in, 3*time.Second, pending, fmt.Errorf("%w: %w", client.ErrInDoubt, context.DeadlineExceeded))
	var st *cli.ExitStatus
	if !errors.As(err, &st) || st.Code != exitInDoubt || documents(t, out.Bytes()) != 1 {
		t.Fatalf("in doubt: %v, stdout %q", err, out.String())
	}
	for _, words := range []string{"page-1 is in doubt", "may have reached demo.lost_reply", "will not run again", "reconciler", "Send the same key"} {
		if !strings.Contains(err.Error(), words) {
			t.Errorf("the in-doubt message lacks %q: %s", words, err)
		}
	}
	if strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("the in-doubt message reads like a failure: %s", err)
	}
	out.Reset()
	err = answer(&out, in, 3*time.Second, nil, fmt.Errorf("client: no answer: %w", context.DeadlineExceeded))
	if !errors.As(err, &st) || st.Code != exitNoAnswer || out.Len() != 0 || !strings.Contains(err.Error(), "The intent was sent") {
		t.Fatalf("no answer: %v, stdout %q", err, out.String())
	}
}

func TestArgsMustBeAnObject(t *testing.T) {
	for in, want := range map[string]string{
		`[1,2]`: "--args must be a JSON object, e.g. --args '{\"amount\":5}', not an array",
		`"x"`:   "not a string", `5`: "not a number", `null`: "not null", `{`: "--args is not JSON",
	} {
		if _, err := argsObject(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--args %s: %v, want %q", in, err, want)
		}
	}
	if m, err := argsObject(`{"amount":5}`); err != nil || m["amount"] != 5.0 {
		t.Errorf("an object: %v %v", m, err)
	}
}

// documents counts the JSON documents in b.
func documents(t *testing.T, b []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("stdout is not JSON: %v: %q", err, b)
			}
			return n
		}
		n++
	}
}

// The README's table of send's exit statuses is this command's, row for
// row (sendExits is their one home).
func TestReadmeListsSendExitStatuses(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "<!-- send-exit-statuses")
	if !ok {
		t.Fatal("README.md has no send-exit-statuses table")
	}
	var rows []string
	for _, line := range strings.Split(table, "\n")[3:] {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		rows = append(rows, line)
	}
	if len(rows) != len(sendExits) {
		t.Fatalf("README lists %d exit statuses, send has %d", len(rows), len(sendExits))
	}
	for i, e := range sendExits {
		statuses := make([]string, len(e.statuses))
		for j, s := range e.statuses {
			statuses[j] = "`" + s + "`"
		}
		want := fmt.Sprintf("| %d | %s | %s |", e.code, strings.Join(statuses, ", "), e.meaning)
		if e.statuses == nil {
			want = fmt.Sprintf("| %d | | %s |", e.code, e.meaning)
		}
		if rows[i] != want {
			t.Errorf("README row %d:\n got %s\nwant %s", i, rows[i], want)
		}
	}
}
