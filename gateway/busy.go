package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// The executor's refusals of a call for want of a place (wire.Result.Busy:
// not_executed, over_share or queue_full, with retry_after_ms; nothing
// ran, nothing was recorded, the key is free), as the gateway answers
// them: 429 when the tenant holds its share of the tool, 503 when the
// tool had no place for anyone, each with Retry-After.

// The limits a refusal of the executor names, in a problem's limit and in
// the refusal metric (for the gateway's holds).
const (
	limitExecutorShare = "executor_share" // over_share
	limitExecutorFull  = "executor_full"  // queue_full
)

// maxBusyHolds bounds the (tenant, tool) pairs held at once: a tenant file
// lists at most 10,000 tenants, and only those over their share are held.
// Past it a pair is not held (the executor still refuses its calls).
const maxBusyHolds = 4096

// busyStatus is the HTTP status of a refusal with the executor's code.
func busyStatus(code string) int {
	if code == codes.ErrQueueFull {
		return http.StatusServiceUnavailable
	}
	return http.StatusTooManyRequests
}

func busyLimit(code string) string {
	if code == codes.ErrQueueFull {
		return limitExecutorFull
	}
	return limitExecutorShare
}

// retryBusySeconds is a Retry-After of d: whole seconds, at least 1.
func retryBusySeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// writeBusy answers a call the executor refused for want of a place: the
// problem carries the executor's code, its message and its answer.
func writeBusy(w http.ResponseWriter, res *wire.Result) {
	w.Header().Set("Retry-After", strconv.Itoa(retryBusySeconds(res.RetryAfter())))
	p := newProblem(busyStatus(res.Error.Code), res.Error.Code, errMessage(res, "the executor had no place for the call"))
	p.IntentID, p.Limit, p.Answer = res.IntentID, busyLimit(res.Error.Code), answerJSON(res)
	p.write(w)
}

// busyHolds remembers, per tenant and tool, until when the executor said
// it has no place for the tenant's calls of the tool (a refusal's retry
// hint); within it the gateway refuses those calls itself, with what is
// left of the hint, and produces nothing.
//
// Why: a caller that does not wait (Prefer: wait=0) is told 202 before the
// executor decides, so it would never hear the refusal; and the executor
// would only refuse again what it refused a moment ago, each time at the
// cost of a produce, a place in a transaction and an answer. A hold is one
// executor member's word: with several members a flooding tenant's keys
// spread over all of them, and each shares its tools alike; a hold ends
// with its hint, so a wrong one costs a caller one retry. Safe for
// concurrent use.
type busyHolds struct {
	now func() time.Time
	mu  struct {
		sync.Mutex
		m map[busyKey]busyHold
	}
}

type busyKey struct{ tenant, tool string }

type busyHold struct {
	until time.Time
	code  string // codes.ErrOverShare or codes.ErrQueueFull
	msg   string
}

func newBusyHolds() *busyHolds {
	h := &busyHolds{now: time.Now}
	h.mu.m = map[busyKey]busyHold{}
	return h
}

// note holds res's tenant and tool when res is a refusal of a call for
// want of a place. A compensation's refusal is about its compensating
// tool, which the answer does not name: it is not held.
func (h *busyHolds) note(res *wire.Result) {
	if res == nil || !res.Busy() || res.Type != wire.TypeCall {
		return
	}
	k := busyKey{res.Tenant, res.Tool}
	hold := busyHold{until: h.now().Add(res.RetryAfter()), code: res.Error.Code, msg: res.Error.Message}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.mu.m[k]; !ok && len(h.mu.m) >= maxBusyHolds {
		h.dropExpiredLocked()
		if len(h.mu.m) >= maxBusyHolds {
			return
		}
	}
	h.mu.m[k] = hold
}

// check refuses a call of tool for tenant while it is held: a
// *limitError with the executor's code and what is left of the hint.
func (h *busyHolds) check(tenant, tool string) error {
	k := busyKey{tenant, tool}
	now := h.now()
	h.mu.Lock()
	hold, ok := h.mu.m[k]
	if ok && !now.Before(hold.until) {
		delete(h.mu.m, k)
		ok = false
	}
	h.mu.Unlock()
	if !ok {
		return nil
	}
	ra := retryBusySeconds(hold.until.Sub(now))
	return &limitError{Limit: busyLimit(hold.code), RetryAfter: ra, Status: busyStatus(hold.code), Code: hold.code,
		Detail: fmt.Sprintf("the executor had no place for the tenant's calls of %s a moment ago (%s); nothing was sent: retry with the same key after %d s",
			tool, hold.msg, ra)}
}

func (h *busyHolds) dropExpiredLocked() {
	now := h.now()
	for k, hold := range h.mu.m {
		if !now.Before(hold.until) {
			delete(h.mu.m, k)
		}
	}
}
