package gateway

import (
	"cmp"
	"net/http"
	"strconv"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// problemTypeBase prefixes every problem type: the code's section of the
// API document, so a type URI dereferences to its explanation.
const problemTypeBase = "https://github.com/atmostonce/toolexec/blob/main/docs/gateway.md#"

// problem is an RFC 9457 problem details object with the gateway's
// extension members.
type problem struct {
	Type     string        `json:"type"`
	Title    string        `json:"title"`
	Status   int           `json:"status"`
	Detail   string        `json:"detail,omitempty"`
	Instance string        `json:"instance,omitempty"`
	Code     string        `json:"code"`
	IntentID string        `json:"intent_id,omitempty"`
	Errors   []schemaError `json:"errors,omitempty"`
	// Limit names the limit a 429 (or an executor's 503) is for:
	// concurrent_calls, calls_per_second, gateway_calls_in_flight,
	// tenant_lookups, gateway_lookups, executor_share, executor_full.
	Limit string `json:"limit,omitempty"`
	// Answer is the executor's answer a problem stands for, when it has
	// one that is not a conflict or a rejection (a refusal for want of a
	// place: busy.go).
	Answer *wire.Result `json:"answer,omitempty"`
}

// Problem codes of the gateway itself; a rejected intent uses the wire's
// reject reason as its code.
const (
	codeUnauthorized     = "unauthorized"
	codeUnknownTool      = "unknown_tool"
	codeUnknownKey       = "unknown_key"
	codeMissingKey       = "missing_idempotency_key"
	codeInvalidKey       = "invalid_idempotency_key"
	codeInvalidJSON      = "invalid_json"
	codeInvalidArgs      = "invalid_args"
	codeArgsMismatch     = "args_mismatch"
	codeNotCompensatable = "not_compensatable"
	codePayloadTooLarge  = "payload_too_large"
	codeMethodNotAllowed = "method_not_allowed"
	codeNotFound         = "not_found"
	codeUnavailable      = "unavailable"
	codeTooManyRequests  = "too_many_requests"
	codeInternal         = "internal"
)

var problemTitles = map[string]string{
	codeUnauthorized:     "A valid bearer token is required",
	codeUnknownTool:      "No such tool",
	codeUnknownKey:       "No such key",
	codeMissingKey:       "Idempotency-Key is required",
	codeInvalidKey:       "Idempotency-Key is malformed",
	codeInvalidJSON:      "The body is not a JSON object",
	codeInvalidArgs:      "Arguments do not match the tool's input schema",
	codeArgsMismatch:     "The key was used with other arguments; nothing ran: send the original arguments, or use a new key",
	codeNotCompensatable: "The key cannot be compensated now",
	codePayloadTooLarge:  "The body is too large",
	codeMethodNotAllowed: "Method not allowed",
	codeNotFound:         "Not found",
	codeUnavailable:      "The service is unavailable; retry with the same key",
	codeTooManyRequests:  "Over a limit of the tenant or of the gateway; nothing was sent: retry after the time given",
	codes.ErrOverShare:   "The tenant holds its share of the tool's calls; nothing ran: retry with the same key after the time given",
	codes.ErrQueueFull:   "The tool has no place for another call; nothing ran: retry with the same key after the time given",
	codeInternal:         "Internal error",
}

func newProblem(status int, code, detail string) *problem {
	title, ok := problemTitles[code]
	if !ok {
		title = "The executor rejected the intent"
	}
	return &problem{Type: problemTypeBase + code, Title: title, Status: status, Detail: detail, Code: code}
}

// write sends p as application/problem+json.
func (p *problem) write(w http.ResponseWriter) {
	b, _ := marshalJSON(p)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

func writeProblem(w http.ResponseWriter, status int, code, detail string) {
	newProblem(status, code, detail).write(w)
}

// writeLimited answers a request refused by a limit: 429, Retry-After,
// and the limit's name in the problem.
func writeLimited(w http.ResponseWriter, le *limitError) {
	w.Header().Set("Retry-After", strconv.Itoa(le.RetryAfter))
	p := newProblem(cmp.Or(le.Status, http.StatusTooManyRequests), cmp.Or(le.Code, codeTooManyRequests), le.Detail)
	p.Limit = le.Limit
	p.write(w)
}
