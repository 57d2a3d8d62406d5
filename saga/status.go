package saga

// Status is the state of one key. The zero value means absent.
type Status uint8

const (
	StatusNone Status = iota
	// Started: a call was committed as started. In flight in this process,
	// or in doubt when no call is running (the crash window).
	StatusStarted
	StatusSucceeded
	StatusFailed
	// Unknown: the request may have reached the tool but no answer came.
	StatusUnknown
	// NotExecuted: known never to have reached the tool; the key is free.
	StatusNotExecuted
	StatusCompensating
	StatusCompensated
	StatusCompensationFailed
	StatusCompensationUnknown
	// AwaitingApproval: the key's tool needs a person's approval before
	// any call (approval.go); nothing ran, nothing may run until an
	// approve command is applied. Not in doubt: no call was made.
	StatusAwaitingApproval
)

var statusNames = [...]string{
	StatusNone:                "none",
	StatusStarted:             "started",
	StatusSucceeded:           "succeeded",
	StatusFailed:              "failed",
	StatusUnknown:             "unknown",
	StatusNotExecuted:         "not_executed",
	StatusCompensating:        "compensating",
	StatusCompensated:         "compensated",
	StatusCompensationFailed:  "compensation_failed",
	StatusCompensationUnknown: "compensation_unknown",
	StatusAwaitingApproval:    "awaiting_approval",
}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "invalid"
}

// ParseStatus is the inverse of String.
func ParseStatus(name string) (Status, bool) {
	for i, n := range statusNames {
		if n == name {
			return Status(i), true
		}
	}
	return StatusNone, false
}

// InDoubt reports whether the key waits for an investigation when no call
// runs for it: the reconciler's work list.
func (s Status) InDoubt() bool {
	return s == StatusStarted || s == StatusUnknown || s == StatusCompensating || s == StatusCompensationUnknown
}

// Settled reports whether the key holds a final outcome that is replayed.
func (s Status) Settled() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCompensated, StatusCompensationFailed:
		return true
	}
	return false
}

// Free reports whether a new call may start for the key.
func (s Status) Free() bool { return s == StatusNone || s == StatusNotExecuted }
