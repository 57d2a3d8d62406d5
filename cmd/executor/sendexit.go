package main

import (
	"fmt"
	"strings"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/codes"
)

// sendExit is one exit status of executor send: a script sees what
// became of its intent without reading the JSON. 0, 1 and 2 mean what
// they mean for every command (cli.ExitOK, ExitError, ExitUsage).
type sendExit struct {
	code     int
	statuses []string // the answers' statuses that end in code
	meaning  string
}

// Exit statuses of executor send that are not cli's.
const (
	exitFailed      = 3
	exitNotExecuted = 4
	exitConflict    = 5
	exitRejected    = 6
	exitInDoubt     = 7
	exitNoAnswer    = 8
	// exitAwaitingApproval: a pending answer whose code is
	// awaiting_approval, which ends the wait at once (exitOf does not
	// map it: its status is pending).
	exitAwaitingApproval = 9
)

// sendExits are the statuses in the order the usage and the README list
// them; the one home of both the codes and what they mean.
var sendExits = []sendExit{
	{cli.ExitOK, []string{codes.StatusSucceeded, codes.StatusCompensated}, "the call (or the compensation) succeeded; a replay of a settled key answers as the key was settled"},
	{cli.ExitError, nil, "the command failed (no broker, the intent not sent); stderr says why"},
	{cli.ExitUsage, nil, "a flag or argument send does not take"},
	{exitFailed, []string{codes.StatusFailed, codes.StatusCompensationFailed}, "the tool answered with a definite failure; the key replays it (a retry takes a new key)"},
	{exitNotExecuted, []string{codes.StatusNotExecuted}, "the call never reached its tool; the key is free again"},
	{exitConflict, []string{codes.StatusConflict}, "the key was used before with other arguments; nothing was called"},
	{exitRejected, []string{codes.StatusRejected}, "the intent was refused (error.code says why: unknown_tool, invalid_args, ...); nothing was called"},
	{exitInDoubt, []string{codes.StatusPending, codes.StatusCompensationPending}, "the key is in doubt when --wait ends: its call may have happened, it will not run again; the answer above is pending"},
	{exitNoAnswer, nil, "no answer within --wait; the intent was sent, and the same key sent again will not run it twice"},
	{exitAwaitingApproval, nil, "pending with error.code awaiting_approval, at once: the tool needs a person's approval and nothing ran; reconciler approve or deny decides, and the same key sent again gets the outcome"},
}

// exitOf is the exit status of an answer's status.
func exitOf(status string) (int, bool) {
	for _, e := range sendExits {
		for _, s := range e.statuses {
			if s == status {
				return e.code, true
			}
		}
	}
	return 0, false
}

// exitTable is the table of sendExits for the usage.
func exitTable() string {
	var b strings.Builder
	for _, e := range sendExits {
		what := strings.Join(e.statuses, ", ")
		if what == "" {
			what = "-"
		}
		fmt.Fprintf(&b, "  %d  %-33s %s\n", e.code, what, e.meaning)
	}
	return b.String()
}
