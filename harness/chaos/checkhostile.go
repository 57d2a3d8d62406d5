package chaos

import (
	"fmt"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// checkHostile judges the hostile waves: every record whose id
// can be read has exactly one terminal answer (checkIntents, which counts
// them with the load's intents), of the kind its poison calls for; a
// record with no readable id is dead-lettered; an answer owed to a deleted
// reply_to comes on the results topic with the reason; and no executor
// aborted the same work over and over.
func checkHostile(in checkInput, r *Report) {
	r.Hostile = map[string]int{}
	byKey := map[string]intentRec{}
	for _, it := range in.intents {
		if it.Hostile != "" {
			byKey[intentKey(it.Tenant, it.ID)] = it
		}
	}
	for _, h := range in.hostile {
		r.Hostile[h.Kind]++
		if h.ID == "" {
			checkDeadLettered(in, r, h)
			continue
		}
		it, ok := byKey[intentKey(h.Tenant, h.ID)]
		if !ok || len(it.Answers) != 1 {
			continue // checkIntents reported it: lost, unanswered or answered twice
		}
		if why := judgeHostile(h, it.Answers[0]); why != "" {
			r.violate("hostile_%s: %s intent %s of %s: %s", h.Kind, wantName(h.Want), h.ID, wire.RoutingKey(h.Tenant, h.Key), why)
		}
	}
	r.AbortedTransactions, r.AbortedBound = in.aborted, abortsBase+abortsPerFault*in.faults
	if r.AbortedTransactions > r.AbortedBound {
		r.violate("aborted_transactions: the executors aborted %d transactions, more than %d (%d + %d per fault): a record may stall a member",
			r.AbortedTransactions, r.AbortedBound, abortsBase, abortsPerFault)
	}
}

func checkDeadLettered(in checkInput, r *Report, h hostileRec) {
	d, ok := in.deadLetters[deadLetterAt{h.Partition, h.Offset}]
	if !ok {
		r.violate("hostile_not_dead_lettered: %s record at partition %d offset %d (no readable id) has no dead letter", h.Kind, h.Partition, h.Offset)
		return
	}
	r.HostileDeadLetters++
	if len(d.Value) > maxDeadLetterValue {
		r.violate("hostile_dead_letter_unbounded: %s record at partition %d offset %d: its dead letter keeps %d bytes of the value",
			h.Kind, h.Partition, h.Offset, len(d.Value))
	}
}

// maxDeadLetterValue is the documented bound on the part of an offending
// value a dead letter keeps (4 KiB, with the value's length and SHA-256).
const maxDeadLetterValue = 4 << 10

// judgeHostile says what is wrong with a hostile record's one terminal
// answer, "" when nothing is.
func judgeHostile(h hostileRec, a answerRec) string {
	switch {
	case h.Want == wantOversized && (a.Status != codes.StatusRejected || a.Code != codeOversized):
		return fmt.Sprintf("answered %s/%s, want rejected/%s", a.Status, a.Code, codeOversized)
	case h.Want == wantRejected && a.Status != codes.StatusRejected:
		return fmt.Sprintf("answered %s/%s, want rejected", a.Status, a.Code)
	case h.Want == wantOnResults && (a.Topic == h.ReplyTo || a.ReplyToError == ""):
		return fmt.Sprintf("answered %s on %s with reply_to_error %q; want it on the results topic with the reason", a.Status, a.Topic, a.ReplyToError)
	}
	return ""
}

func wantName(w want) string {
	switch w {
	case wantOversized:
		return "oversized"
	case wantRejected:
		return "undecodable"
	case wantOnResults:
		return "reply_to_gone"
	}
	return "answered"
}
