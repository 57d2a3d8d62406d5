package gateway

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// TestMCPResultOfAKeyAwaitingApproval: a model is told that a person
// decides and to ask again with the same key, never that its call failed
// (an error result invites a retry with a new key); a denial and a lapse
// read as what they are.
func TestMCPResultOfAKeyAwaitingApproval(t *testing.T) {
	waiting := &wire.Result{Tenant: "acme", Key: "k", Tool: "pay", Status: codes.StatusPending, ApprovalUntil: 1_700_000_000_000,
		Error: &wire.ErrorInfo{Code: codes.ErrAwaitingApproval, Message: "the call waits for a person's approval (asked: ops)"}}
	out := mcpResult(reply{res: waiting}, 0)
	if out.IsError || out.Meta[metaStatus] != codes.StatusPending {
		t.Fatalf("awaiting approval: IsError %v, meta %v", out.IsError, out.Meta)
	}
	s := contentText(t, out)
	for _, want := range []string{"Waiting for a person's approval", "same idempotency_key", "2023-11-14T22:13:20Z", "do not call with a new key"} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
	denied := &wire.Result{Status: codes.StatusFailed, Error: &wire.ErrorInfo{Code: codes.ErrApprovalDenied, Message: "bob denied the call: wrong account"}}
	if out := mcpResult(reply{res: denied, done: true}, 0); !out.IsError || !strings.HasPrefix(contentText(t, out), "Denied: a person refused this action (bob denied the call: wrong account)") {
		t.Errorf("denied: %v %q", out.IsError, contentText(t, out))
	}
	lapsed := &wire.Result{Status: codes.StatusNotExecuted, Error: &wire.ErrorInfo{Code: codes.ErrApprovalLapsed}}
	if s := contentText(t, mcpResult(reply{res: lapsed, done: true}, 0)); !strings.HasPrefix(s, "Not executed: no one approved") {
		t.Errorf("lapsed: %q", s)
	}
	if retryAfter(waiting, retryInDoubt) != retryApproval || retryAfter(denied, retryInDoubt) != retryInDoubt {
		t.Error("Retry-After of a key awaiting approval")
	}
}

func contentText(t *testing.T, out *mcp.CallToolResult) string {
	t.Helper()
	tc, ok := out.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", out.Content[0])
	}
	return tc.Text
}
