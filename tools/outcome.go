package tools

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Status is the saga-facing result of an invocation.
type Status uint8

const (
	// Succeeded: the tool answered and did the work.
	Succeeded Status = iota + 1
	// Failed is a definite failure: the tool answered and refused (4xx).
	Failed
	// Unknown: the request may have reached the tool but no definite
	// answer came (timeout after send, 5xx, reset).
	Unknown
	// NotExecuted: known never to have reached the tool (connection
	// refused, name not resolved, dial timeout).
	NotExecuted
)

// String returns "succeeded", "failed", "unknown" or "not_executed", and
// "Status(n)" for any other value.
func (s Status) String() string {
	switch s {
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	case NotExecuted:
		return "not_executed"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is what one invocation (with its retries) came to.
type Outcome struct {
	Status Status
	// Result is the decoded JSON body on success (numbers as float64), the
	// body as a string when a 2xx body is not JSON, nil when it is empty.
	Result any
	// Code is a machine-readable reason on non-success: one of the Code*
	// constants or "http_<status>".
	Code string
	// Message is human-readable, at most MaxMessageBytes of valid UTF-8.
	Message string
	// Attempts counts the requests sent or tried; 0 when none was.
	Attempts int
}

// MaxMessageBytes bounds Outcome.Message.
const MaxMessageBytes = 1 << 10

// Codes used in Outcome.Code besides "http_<status>".
const (
	CodeTimeout           = "timeout"            // per-attempt timeout after the connection was obtained
	CodeReset             = "reset"              // connection lost after the request was sent
	CodeTransport         = "transport_error"    // other failure after the connection was obtained
	CodeConnectionRefused = "connection_refused" // never reached
	CodeDNS               = "dns"                // never reached
	CodeDialTimeout       = "dial_timeout"       // never reached
	CodeTLS               = "tls"                // never reached: handshake or certificate failure
	CodeConnect           = "connect_error"      // never reached, other reason
	CodeCancelled         = "cancelled"          // the caller's ctx ended
	CodeOverloaded        = "overloaded"         // max_in_flight reached for too long; never sent
	CodeBudgetSpent       = "pending_ttl_spent"  // too late to start: an attempt could outlive pending_ttl; never sent
	CodeBadRequest        = "bad_request"        // the Request could not be sent (no key, bad URL); never sent
	CodeBadResponse       = "bad_response"       // the answer could not be understood
	CodeResponseTooLarge  = "response_too_large" // 2xx body over 1 MiB: it did run
	CodePanic             = "panic"              // an in-process tool panicked
	CodeProbeFailed       = "probe_failed"       // the probe says the call failed
	CodeProbeNotFound     = "probe_not_found"    // the probe has never seen the key
	CodeProbeFenced       = "probe_fenced"       // never seen, and now refused by the tool
	CodeProbeUnfenced     = "probe_unfenced"     // a fencing tool's "no record" without the fence: not trusted
	CodeProbeStatus       = "probe_unknown_status"
	CodeNoProbeURL        = "no_probe_url"
)

// httpCode is the Code for an HTTP status.
func httpCode(status int) string { return "http_" + strconv.Itoa(status) }

// outcome builds a non-success Outcome with a bounded message.
func outcome(st Status, code, msg string) Outcome {
	return Outcome{Status: st, Code: code, Message: bound(msg, MaxMessageBytes)}
}

// bound returns s as valid UTF-8 cut to at most n bytes on a rune boundary.
func bound(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
