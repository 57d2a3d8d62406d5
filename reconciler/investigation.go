package reconciler

import (
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/state"
)

// ErrCorrupt marks a stored investigation that fails its read-side check.
// Investigations live next to the view and are as rebuildable: deleting the
// data directory loses only attempt counts and escalation flags.
var ErrCorrupt = errors.New("reconciler: corrupt investigation")

// Investigation is what the reconciler remembers about one subject in
// doubt, in Pebble next to the view (state's auxiliary space), so that a
// restart resumes the investigation instead of starting it again: how many
// rounds failed, when the next may start, whether it was escalated, and
// the command it sent. It belongs to one (Phase, CallID). A key has at
// most one of each phase: the investigation of its call lives through the
// compensations of that call (each one that comes back without reaching
// its tool is a failed round of the call's), the investigation of a
// compensation only as long as that compensation. The view's fold deletes
// an investigation in the batch that ends its subject.
type Investigation struct {
	Phase  Phase  `msgpack:"phase"`
	CallID string `msgpack:"call_id"`
	// Attempts counts rounds that did not settle the key: an ambiguous
	// retry or probe, a command that did not show in the log in time, a
	// compensation that came back not_executed.
	Attempts int `msgpack:"attempts"`
	// Compensations counts the compensations of the call that came back
	// without reaching their tool (call phase only); the next compensate
	// command is a new round, with an id of its own.
	Compensations int    `msgpack:"compensations,omitempty"`
	StartedAt     int64  `msgpack:"started_at"`             // unix ms of the first round
	NextAt        int64  `msgpack:"next_at,omitempty"`      // no new round before this (unix ms)
	Escalated     bool   `msgpack:"escalated,omitempty"`    // parked for an operator
	EscalatedAt   int64  `msgpack:"escalated_at,omitempty"` // unix ms
	Reason        string `msgpack:"reason,omitempty"`       // the last finding, or why it was escalated
	Sent          *Sent  `msgpack:"sent,omitempty"`         // the command of this investigation, once sent
}

// Sent is a command the reconciler produced for a subject. It is written
// (synced) before the command is produced, so a restart never sends a
// second command for the subject while the first may still land.
type Sent struct {
	Type    string `msgpack:"type"`              // wire.TypeResolve or TypeCompensate
	ID      string `msgpack:"id"`                // the command's intent id (deterministic, see commandID)
	Outcome string `msgpack:"outcome,omitempty"` // resolve only
	At      int64  `msgpack:"at"`                // unix ms
}

// matches reports whether inv is the investigation of s.
func (inv *Investigation) matches(s Subject) bool {
	return inv != nil && inv.Phase == s.Phase && inv.CallID == s.CallID
}

// investigationKey is the auxiliary-space key of a key's investigation of
// phase: "inv/" for the call (the key every version used), "invc/" for a
// compensation. An investigation of the other phase found under "inv/"
// (written before the split) does not match its subject and is replaced.
func investigationKey(tenant, key string, phase Phase) []byte {
	prefix := investigationPrefix
	if phase == PhaseCompensation {
		prefix = compensationInvestigationPrefix
	}
	b := make([]byte, 0, len(prefix)+1+len(tenant)+len(key))
	b = append(b, prefix...)
	b = append(b, tenant...)
	b = append(b, 0)
	return append(b, key...)
}

// investigationPrefix and compensationInvestigationPrefix start the keys
// of call and compensation investigations.
var (
	investigationPrefix             = []byte(state.AuxInvestigations)
	compensationInvestigationPrefix = []byte(state.AuxCompensationInvestigations)
)

func encodeInvestigation(inv *Investigation) ([]byte, error) {
	if err := checkInvestigation(inv); err != nil {
		return nil, err
	}
	b, err := msgpack.Marshal(inv)
	if err != nil {
		return nil, fmt.Errorf("reconciler: encode investigation: %w", err)
	}
	return b, nil
}

func decodeInvestigation(b []byte) (*Investigation, error) {
	var inv Investigation
	if err := mpread.Unmarshal(b, &inv); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := checkInvestigation(&inv); err != nil {
		return nil, err
	}
	return &inv, nil
}

// checkInvestigation is the pair assertion run before a write and after a
// read.
func checkInvestigation(inv *Investigation) error {
	switch {
	case inv.Phase != PhaseCall && inv.Phase != PhaseCompensation:
		return fmt.Errorf("%w: phase %d", ErrCorrupt, inv.Phase)
	case inv.CallID == "":
		return fmt.Errorf("%w: no call id", ErrCorrupt)
	case inv.Attempts < 0 || inv.Compensations < 0:
		return fmt.Errorf("%w: %d attempts, %d compensations", ErrCorrupt, inv.Attempts, inv.Compensations)
	case inv.Compensations > 0 && inv.Phase != PhaseCall:
		return fmt.Errorf("%w: compensations counted on a compensation", ErrCorrupt)
	case inv.Sent != nil && (inv.Sent.ID == "" || inv.Sent.Type == ""):
		return fmt.Errorf("%w: a sent command without id or type", ErrCorrupt)
	}
	return nil
}
