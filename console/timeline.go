package console

import (
	"encoding/json"
	"fmt"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
)

// timelineRow is one event of a key as the key page shows it: a sentence,
// and every field as `executor history` prints it.
type timelineRow struct {
	At      int64
	Kind    string
	What    string
	By      string
	Forced  bool
	Details string // the event as JSON (eventlog.AuditView)
}

func timeline(evs []*saga.Event) []timelineRow {
	out := make([]timelineRow, 0, len(evs))
	for _, ev := range evs {
		if ev.Kind == saga.EvRound {
			continue
		}
		details, _ := json.MarshalIndent(eventlog.AuditView(ev), "", "  ")
		out = append(out, timelineRow{At: ev.At, Kind: ev.Kind.String(), What: sentence(ev), By: ev.By, Forced: ev.Forced, Details: string(details)})
	}
	return out
}

// sentence says what an event means for the key.
func sentence(ev *saga.Event) string {
	switch ev.Kind {
	case saga.EvStarted:
		return fmt.Sprintf("Call %d of %s started by intent %s, under downstream key %s.", ev.Attempt, ev.Tool, ev.IntentID, ev.DownstreamKey)
	case saga.EvOutcome:
		return "The call's outcome: " + statusWithError(ev) + "."
	case saga.EvReplayed:
		return "Intent " + ev.IntentID + " was answered from the record (a replay)."
	case saga.EvCoalesced:
		return "Intent " + ev.IntentID + " waits for the call in flight."
	case saga.EvWaiting:
		return "Intent " + ev.IntentID + " waits: the key was in doubt (answered pending)."
	case saga.EvConflicted:
		return "Intent " + ev.IntentID + " was refused: other arguments under the same key (conflict)."
	case saga.EvResolved:
		return fmt.Sprintf("Resolved %s by %s: %s", statusWithError(ev), ev.By, ev.Reason)
	case saga.EvCompensationStarted:
		return fmt.Sprintf("Compensation with %s started by %s (intent %s), under downstream key %s.", ev.Tool, orUnknown(ev.By), ev.IntentID, ev.DownstreamKey)
	case saga.EvCompensationOutcome:
		return "The compensation's outcome: " + statusWithError(ev) + byWhom(ev) + "."
	case saga.EvExpired:
		return "Expired: the key is free again."
	case saga.EvSnapshot:
		return "The record was restated (a snapshot round), so that it outlives the retention of its older events."
	case saga.EvReadStarted:
		return "A read-only call was taken on by intent " + ev.IntentID + "."
	case saga.EvReadAnswered:
		return "The read-only call of intent " + ev.IntentID + " was answered."
	}
	if s := approvalSentence(ev); s != "" {
		return s
	}
	return ev.Kind.String()
}

// approvalSentence says what an event of a request for approval means.
func approvalSentence(ev *saga.Event) string {
	switch ev.Kind {
	case saga.EvAwaitingApproval:
		return fmt.Sprintf("Intent %s asked for call %d of %s, which needs a person's approval (asked: %s) until %s; nothing ran. Arguments' digest %x.",
			ev.IntentID, ev.Attempt, ev.Tool, asked(ev.Approvers), formatMs(ev.ApprovalUntil), ev.ArgsHash)
	case saga.EvApproved:
		return fmt.Sprintf("Approved by %s (command %s) for intent %s's arguments (digest %x): %s", ev.By, ev.IntentID, ev.CallID, ev.ArgsHash, ev.Reason)
	case saga.EvDenied:
		return fmt.Sprintf("Denied by %s (command %s): %s. The key ends failed; nothing ran.", ev.By, ev.IntentID, ev.Reason)
	case saga.EvApprovalLapsed:
		return "The request lapsed: " + ev.Reason + ". The key ends not_executed; nothing ran."
	}
	return ""
}

func statusWithError(ev *saga.Event) string {
	s := ev.Status.String()
	if ev.Err != nil {
		s += fmt.Sprintf(" (%s: %s)", ev.Err.Code, ev.Err.Message)
	}
	return s
}

func byWhom(ev *saga.Event) string {
	if ev.By == "" {
		return ""
	}
	return " by " + ev.By + ": " + ev.Reason
}

func orUnknown(s string) string {
	if s == "" {
		return "an agent"
	}
	return s
}
