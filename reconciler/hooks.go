package reconciler

import "errors"

// Point names a moment of an investigation at which a test may inject a
// fault.
type Point string

const (
	// PointInvestigating: in a worker, before a retry or probe is made.
	PointInvestigating = Point("investigating")
	// PointCommandRecorded: the command is remembered (synced) and not yet
	// produced.
	PointCommandRecorded = Point("command_recorded")
	// PointCommandSent: the command is produced and acknowledged.
	PointCommandSent = Point("command_sent")
)

// Hooks are called at protocol points. A nil hook is skipped. Hooks run on
// the loop goroutine (PointInvestigating: on the worker) and may block.
type Hooks struct {
	// At may return an error to make the reconciler stop on the spot, as a
	// kill -9 would leave it: Run returns an error wrapping ErrCrashed, and
	// nothing after the point happens (no write, no command). Call Close
	// after.
	At func(p Point, routingKey string) error
}

// ErrCrashed is wrapped by Run's error after a hook asked for a crash.
var ErrCrashed = errors.New("reconciler: crashed (fault injection)")

func (h Hooks) at(p Point, rk string) error {
	if h.At == nil {
		return nil
	}
	if err := h.At(p, rk); err != nil {
		return errors.Join(ErrCrashed, err)
	}
	return nil
}
