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
// ErrMayStillLand, for errors.Is; nil when r is not one of them. The kind
// is the answer's error.refusal; an answer without it (written before the
// code was part of contract v1) is read by its message's text
// (codes.RefusalNoRecordText, codes.RefusalMayStillLandText).
func (r *Result) Refusal() error {
	if r == nil || r.Status != codes.StatusRejected || r.Error == nil || r.Error.Code != codes.ReasonInvalidCommand {
		return nil
	}
	switch refusalKind(r.Error) {
	case codes.RefusalNoRecord:
		return ErrNoRecord
	case codes.RefusalMayStillLand:
		return ErrMayStillLand
	}
	return nil
}

// refusalKind is e's refusal code, or the one its message names when it
// has none.
func refusalKind(e *ErrorInfo) string {
	switch msg := e.Message; {
	case e.Refusal != "":
		return e.Refusal
	case strings.Contains(msg, codes.RefusalNoRecordText):
		return codes.RefusalNoRecord
	case strings.Contains(msg, codes.RefusalMayStillLandText):
		return codes.RefusalMayStillLand
	}
	return ""
}
