package executor

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// drain waits (bounded) for the calls in flight and records their
// outcomes, so that a planned rebalance or a shutdown leaves nothing in
// doubt. Calls queued but not started never reached their tool: they are
// recorded not_executed at once.
func (e *Executor) drain(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	e.notStarted(e.disp.cancelQueued())
	if !e.stillMember(ctx) {
		e.cfg.Logger.Warn("this member was fenced out of the group; nothing can be recorded, keys with calls running stay in doubt", "calls", e.core.InFlight())
		return nil
	}
	// Read-only calls are not counted in flight (they have no record) but
	// their intents' offsets are committed: their answers must go out too.
	for e.callsPending() {
		if err := e.tick(ctx, nil); err != nil {
			if errors.Is(err, errRetryTick) {
				// The tick that records the calls could not run now (a
				// restore it needs failed: a leader moving, a broker
				// away). The drain ends as if timed out: the calls'
				// keys stay in doubt for the next owner. Returning the
				// error stopped the member, which records nothing either.
				e.cfg.Logger.Warn("drain cut short: the outcomes cannot be recorded now; keys with calls running stay in doubt", "err", err, "calls", e.core.InFlight())
				return nil
			}
			return err
		}
		if !e.callsPending() || e.waitCompletion(ctx) != nil {
			break
		}
	}
	if n := e.core.InFlight(); n > 0 {
		e.cfg.Logger.Warn("drain timed out; keys with calls still running stay in doubt", "calls", n, "timeout", timeout)
	}
	return nil
}

// callsPending reports whether any call still owes an outcome or an
// answer: running or queued in the dispatcher, finished but not collected
// (a call sends its completion before it frees its slot), or collected
// but not committed.
func (e *Executor) callsPending() bool {
	return e.core.InFlight() > 0 || e.core.Unrecorded() > 0 || e.disp.queued() > 0 || len(e.disp.out) > 0
}

// stillMember asks the coordinator whether this member's generation is
// current. A member that lost its session (a zombie waking up) must not
// wait to record outcomes: every commit would be fenced, and the end of
// the transaction would wait for a heartbeat that cannot come.
func (e *Executor) stillMember(ctx context.Context) bool {
	member, gen := e.client.GroupMetadata()
	if member == "" || gen < 0 {
		return false
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = e.cfg.Group, member, gen
	resp, err := req.RequestWith(ctx, e.client)
	if err != nil {
		return true // cannot tell: try, the fence still guards the commit
	}
	err = kerr.ErrorForCode(resp.ErrorCode)
	return err == nil || errors.Is(err, kerr.RebalanceInProgress)
}

// waitCompletion waits for one finished call, or drainPoll (a call's slot
// is released just after its completion is sent, so the drain re-checks),
// or the end of ctx, which it reports.
func (e *Executor) waitCompletion(ctx context.Context) error {
	select {
	case c := <-e.disp.out:
		e.finished(c)
		return nil
	case <-time.After(drainPoll):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown drains and returns; Close leaves the group.
func (e *Executor) shutdown() error {
	e.applyOwnershipChanges()
	err := e.drain(e.cfg.DrainTimeout)
	e.cancelCall()
	return err
}
