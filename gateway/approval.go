package gateway

import (
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// A tool with approval: required answers its first intent pending with
// the code awaiting_approval, at once (client.ErrApprovalPending ends the
// wait): a 202 whose body is that answer (who was asked, until when), its
// Location the key's GET, which answers the same until someone decides.

// approvalNote ends the MCP description of a tool that needs approval, so
// that a model expects the wait before it calls.
const approvalNote = "Every call waits for a person's approval of this key with these arguments before it runs: the first answer says so; call again later with the same key and arguments for the outcome."

// retryApproval is the Retry-After of a key awaiting approval: a person
// decides, not the executor, so there is no point asking every second.
const retryApproval = 30

// retryAfter is the Retry-After of a 202 with answer res.
func retryAfter(res *wire.Result, otherwise int) int {
	if res != nil && res.AwaitingApproval() {
		return retryApproval
	}
	return otherwise
}

// approvalText is what a model reads of a key awaiting approval: the call
// did not run, a person decides, and the same key is to be asked again,
// never a new one (MCP's tool result; not an error, which a model could
// take for a reason to call again with another key).
func approvalText(res *wire.Result) string {
	s := "Waiting for a person's approval: this action did not run. A person must approve this exact call (this idempotency_key with these arguments) before it runs, at most once"
	if res.ApprovalUntil > 0 {
		s += fmt.Sprintf("; the request lapses at %s unless someone decides", time.UnixMilli(res.ApprovalUntil).UTC().Format(time.RFC3339))
	}
	return s + ". Tell the user it awaits approval. To learn the outcome later, call again with the same idempotency_key and the same arguments; " +
		"do not call with a new key or other arguments, which would ask for another approval."
}

// deniedText is a model's reading of a call a person denied.
func deniedText(res *wire.Result) string {
	return fmt.Sprintf("Denied: a person refused this action (%s). It did not run, and it will not run for this idempotency_key. "+
		"Do not try it again with a new key unless the user asks for it.", errMessage(res, "no reason given"))
}

// lapsedText is a model's reading of a request no one decided in time.
func lapsedText() string {
	return "Not executed: no one approved this action before its request lapsed; nothing ran. Calling again with the same idempotency_key asks for approval again."
}

// approvalTerminalText is the text of a terminal answer that ended a
// request for approval, "" for any other answer.
func approvalTerminalText(res *wire.Result) string {
	switch {
	case res.Error == nil:
	case res.Status == codes.StatusFailed && res.Error.Code == codes.ErrApprovalDenied:
		return deniedText(res)
	case res.Status == codes.StatusNotExecuted && res.Error.Code == codes.ErrApprovalLapsed:
		return lapsedText()
	}
	return ""
}
