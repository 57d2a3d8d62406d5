package wire

import (
	"errors"
	"strings"

	"github.com/atmostonce/toolexec/codes"
)

// The refusals of a command that a caller acts on, as values: see
// Result.Refusal.
var (
	// ErrNoRecord: a compensate of a key that has no record.
	ErrNoRecord = errors.New("wire: refused: the key has no record")
	// ErrMayStillLand: a compensate or resolve before the call's
	// pending_ttl passed, without force; only a forced command settles it
	// now.
	ErrMayStillLand = errors.New("wire: refused: the call may still reach its tool")
)

// Refusal returns the kind of r's refusal, ErrNoRecord or
// ErrMayStillLand, for errors.Is; nil when r is not one of them. The wire
// gives every refused command one code (invalid_command) and the kind in
// the message's text (codes.RefusalNoRecord, codes.RefusalMayStillLand),
// which this is the one reader of.
func (r *Result) Refusal() error {
	if r == nil || r.Status != codes.StatusRejected || r.Error == nil || r.Error.Code != codes.ReasonInvalidCommand {
		return nil
	}
	switch msg := r.Error.Message; {
	case strings.Contains(msg, codes.RefusalNoRecord):
		return ErrNoRecord
	case strings.Contains(msg, codes.RefusalMayStillLand):
		return ErrMayStillLand
	}
	return nil
}
