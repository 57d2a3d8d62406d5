package chaos

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// The hostile checks fail on each way a poison record can be mishandled
// and pass on the answers the wire contract asks for.
func TestCheckHostileFlagsEachMishandling(t *testing.T) {
	const results, gone = "tool.results", "tool.results-h1-reply"
	base := func() checkInput {
		in := checkInput{intents: map[string]intentRec{}, hist: map[string]*keyHistory{}, escalated: map[string]bool{},
			deadLetters: map[deadLetterAt]*wire.DeadLetter{{Partition: 2, Offset: 40}: {Value: []byte{0xc1}}}, faults: 10}
		add := func(h hostileRec, a answerRec) {
			in.hostile = append(in.hostile, h)
			in.intents[intentKey(h.Tenant, h.ID)] = intentRec{ID: h.ID, Tenant: h.Tenant, Key: h.Key, Tool: h.Tool, Hostile: h.Kind,
				Produced: true, Terminal: []string{a.Status}, Answers: []answerRec{a}}
		}
		add(hostileRec{Kind: PoisonTraceparent, Tenant: "hx", Key: "h1-tp", ID: "a1", Tool: ToolNative, Want: wantOversized},
			answerRec{Status: codes.StatusRejected, Code: codeOversized, Topic: results})
		add(hostileRec{Kind: PoisonBadField, Tenant: "hx", Key: "h1-bad", ID: "a2", Tool: ToolNative, Want: wantRejected},
			answerRec{Status: codes.StatusRejected, Code: "invalid_field", Topic: results})
		add(hostileRec{Kind: PoisonReplyGone, Tenant: "hy", Key: "h1-late", ID: "a3", Tool: ToolRead, Want: wantOnResults, ReplyTo: gone},
			answerRec{Status: codes.StatusSucceeded, Topic: results, ReplyToError: "topic gone"})
		in.hostile = append(in.hostile, hostileRec{Kind: PoisonGarbage, Tenant: "hx", Key: "h1-garbage", Partition: 2, Offset: 40, Want: wantDeadLetter})
		return in
	}
	answer := func(in *checkInput, id string, a answerRec) {
		for k, it := range in.intents {
			if it.ID == id {
				it.Answers, it.Terminal = []answerRec{a}, []string{a.Status}
				in.intents[k] = it
			}
		}
	}
	cases := []struct {
		name string
		mod  func(*checkInput)
		want string
	}{
		{"clean", func(*checkInput) {}, ""},
		{"a field over its bound was executed", func(in *checkInput) {
			answer(in, "a1", answerRec{Status: codes.StatusSucceeded, Topic: results})
		}, "hostile_traceparent_600k"},
		{"an undecodable record was executed", func(in *checkInput) {
			answer(in, "a2", answerRec{Status: codes.StatusFailed, Topic: results})
		}, "hostile_undecodable_with_id"},
		{"an answer owed to a deleted reply_to without the reason", func(in *checkInput) {
			answer(in, "a3", answerRec{Status: codes.StatusSucceeded, Topic: results})
		}, "hostile_reply_to_deleted"},
		{"a poison record with a readable id never answered", func(in *checkInput) {
			it := in.intents[intentKey("hx", "a1")]
			it.Answers, it.Terminal = nil, nil
			in.intents[intentKey("hx", "a1")] = it
		}, "lost_intent"},
		{"a record with no id not dead-lettered", func(in *checkInput) { in.deadLetters = nil }, "hostile_not_dead_lettered"},
		{"a dead letter that keeps the whole value", func(in *checkInput) {
			in.deadLetters[deadLetterAt{2, 40}].Value = make([]byte, 1<<20)
		}, "hostile_dead_letter_unbounded"},
		{"a member aborting the same work over and over", func(in *checkInput) { in.aborted = 2000 }, "aborted_transactions"},
		{"aborts within the bound", func(in *checkInput) { in.aborted = abortsBase + abortsPerFault*in.faults }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mod(&in)
			var r Report
			check(in, &r)
			var kinds []string
			for _, v := range r.Violations {
				kind, _, _ := strings.Cut(v, ":")
				kinds = append(kinds, kind)
			}
			if strings.Join(kinds, ",") != c.want {
				t.Fatalf("violations %q, want kinds %q", r.Violations, c.want)
			}
		})
	}
}

// Two tenants may send one intent id: each answer goes to its own intent.
// An answer whose tenant matches no intent goes to the one intent with its
// id, if there is only one.
func TestTrackerTellsTenantsApart(t *testing.T) {
	tr := newTracker("results")
	for _, tenant := range []string{"hx", "hy"} {
		tr.addHostile(&wire.Intent{ID: "same", Tenant: tenant, Key: "k", Tool: ToolRead}, PoisonSameID)
		tr.produced(tenant, "same", nil)
	}
	tr.add(&wire.Intent{ID: "solo", Tenant: "t0", Key: "k2", Tool: ToolNative})
	tr.answer(&wire.Result{IntentID: "same", Tenant: "hy", Status: codes.StatusSucceeded}, "results")
	tr.answer(&wire.Result{IntentID: "solo", Tenant: "", Status: codes.StatusRejected}, "results")
	tr.answer(&wire.Result{IntentID: "same", Tenant: "", Status: codes.StatusRejected}, "results") // ambiguous: a stray
	hx, _ := tr.get("hx", "same")
	hy, _ := tr.get("hy", "same")
	solo, _ := tr.get("t0", "solo")
	_, _, strays := tr.snapshot()
	if len(hx.Terminal) != 0 || len(hy.Terminal) != 1 || len(solo.Terminal) != 1 || strays[codes.StatusRejected] != 1 {
		t.Fatalf("hx %v, hy %v, solo %v, strays %v", hx.Terminal, hy.Terminal, solo.Terminal, strays)
	}
}

// An answer owed to a reply_to that was not deleted (the delete failed,
// or came after the answer) is judged as answered, not as misplaced.
func TestAnswerOnAReplyToStillThereIsExpected(t *testing.T) {
	const x = "tool.results-h1-reply"
	tr := newTracker("tool.results")
	h := &Hostile{tr: tr}
	owed := &wire.Intent{ID: "o1", Tenant: "hy", Key: "slow-h1-reply-owed", Tool: ToolComp}
	tr.addHostile(owed, PoisonReplyGone)
	h.mu.recs = append(h.mu.recs, hostileRec{Kind: PoisonReplyGone, Tenant: "hy", Key: owed.Key, ID: "o1", Want: wantOnResults, ReplyTo: x})
	if h.answeredOn("hy", "o1", x) {
		t.Fatal("answeredOn before any answer")
	}
	tr.answer(&wire.Result{IntentID: "o1", Tenant: "hy", Key: owed.Key, Tool: ToolComp, Status: codes.StatusCompensated}, x)
	if !h.answeredOn("hy", "o1", x) {
		t.Fatal("answeredOn missed the answer read from the reply_to")
	}
	rec := h.Records()[0]
	a := answerRec{Status: codes.StatusCompensated, Topic: x}
	if judgeHostile(rec, a) == "" {
		t.Fatal("before expectAnswered an answer on the reply_to must be judged misplaced")
	}
	h.expectAnswered("o1")
	if got := judgeHostile(h.Records()[0], a); got != "" {
		t.Fatalf("after expectAnswered: %s", got)
	}
}
