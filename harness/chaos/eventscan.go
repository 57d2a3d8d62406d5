package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
)

// keyHistory is what the committed event log says of one key.
type keyHistory struct {
	Tool        string
	Rec         *saga.Record // the fold (saga.Apply), nil when none
	Started     int          // started events (attempts)
	CompStarted int
	Unknown     int // outcomes with status unknown (the call's answer was lost)
	// Resolved events by author, and their statuses.
	ResolvedBy  map[string]int
	ResolvedSt  []saga.Status
	CompInDoubt int // compensations started while the key was in doubt
	// ResolvedComp counts resolves of a compensation in doubt.
	ResolvedComp int
	LastStatus   saga.Status
	// Calls are the key's calls (one per started event), in log order,
	// Comps its compensations: each with the downstream key its tool saw.
	Calls []generation
	Comps []generation
	// EarlyUndo lists compensations started while the call they undo was
	// in doubt and could still reach its tool (before its PendingUntil),
	// without an operator's force: the undo may overtake the effect.
	EarlyUndo []string
	// Approvals counts the key's requests for approval and what became of
	// them (requested, approved, denied, lapsed); approved is the last
	// approved event not yet followed by its call's started event.
	Approvals map[string]int
	approved  *saga.Event
}

// generation is one call (or compensation) of a key: its downstream key
// and what the log says became of it.
type generation struct {
	ID       string // the intent id that started it
	DK       string
	At       int64 // unix ms it started
	Deadline int64 // unix ms after which no executor may send it (At + the tool's pending_ttl); 0 unknown
	Status   saga.Status
	Expired  bool // the key's record expired after it (the key is free again)
	// Approved: an approved event of this call's request, for the
	// arguments the request recorded, came before its started event.
	Approved bool
}

// scanEvents reads every events partition to its end (waiting until no
// transaction is open on it) and folds each key.
func scanEvents(ctx context.Context, brokers []string, names topics.Names, opts ...kgo.Opt) (map[string]*keyHistory, []string, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, names.Events)
	if err != nil || td[names.Events].Err != nil {
		return nil, nil, fmt.Errorf("chaos: topic %s: %v %v", names.Events, err, td[names.Events].Err)
	}
	out := map[string]*keyHistory{}
	var stuck []string
	for p := range td[names.Events].Partitions {
		end, err := eventlog.Target(ctx, adm, names.Events, p, 60*time.Second)
		if err != nil {
			// An open transaction that never ends: read what is committed
			// (up to the LSO) and report the partition.
			stuck = append(stuck, err.Error())
			if end, err = lastStable(ctx, adm, names.Events, p); err != nil {
				return nil, nil, err
			}
		}
		_, err = eventlog.Read(ctx, brokers, names.Events, p, 0, end, func(_ int64, r *kgo.Record) error {
			ev, err := eventlog.Decode(r.Value)
			if err != nil {
				return fmt.Errorf("chaos: undecodable event at %s/%d: %w", names.Events, p, err)
			}
			if ev.Kind != saga.EvRound { // a snapshot round's end is about the partition, not a key
				foldEvent(out, string(r.Key), ev)
			}
			return nil
		}, opts...)
		if err != nil {
			return nil, nil, err
		}
	}
	return out, stuck, nil
}

// lastStable is the partition's last stable offset (read-committed end).
func lastStable(ctx context.Context, adm *kadm.Client, topic string, p int32) (int64, error) {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(topic, p)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("chaos: last stable offset of %s/%d: %v", topic, p, o.Err)
	}
	return o.Offset, nil
}

func foldEvent(out map[string]*keyHistory, rk string, ev *saga.Event) {
	h := out[rk]
	if h == nil {
		h = &keyHistory{ResolvedBy: map[string]int{}, Approvals: map[string]int{}}
		out[rk] = h
	}
	foldApproval(h, ev)
	switch ev.Kind {
	case saga.EvStarted:
		h.Started++
		h.Tool = ev.Tool
		g := generation{ID: ev.IntentID, DK: saga.DownstreamKey(ev.DownstreamKey, ev.Tenant, ev.Tool, ev.Key), At: ev.At,
			Approved: approves(h, ev)}
		h.approved = nil
		if ev.PendingTTL > 0 {
			g.Deadline = ev.At + ev.PendingTTL
		}
		h.Calls = append(h.Calls, g)
	case saga.EvOutcome:
		if ev.Status == saga.StatusUnknown {
			h.Unknown++
		}
	case saga.EvResolved:
		h.ResolvedBy[ev.By]++
		if h.Rec != nil && (h.Rec.Status == saga.StatusCompensating || h.Rec.Status == saga.StatusCompensationUnknown) {
			h.ResolvedComp++
		}
		h.ResolvedSt = append(h.ResolvedSt, ev.Status)
	case saga.EvCompensationStarted:
		foldCompensationStarted(h, ev)
	case saga.EvExpired:
		for i := range h.Calls {
			h.Calls[i].Expired = true
		}
	}
	h.Rec = saga.Apply(h.Rec, *ev)
	if h.Rec != nil {
		h.LastStatus = h.Rec.Status
	}
	settleGenerations(h)
}

// foldApproval counts a key's approval events and keeps the last approved
// one for the started event that must follow it.
func foldApproval(h *keyHistory, ev *saga.Event) {
	switch ev.Kind {
	case saga.EvAwaitingApproval:
		h.Tool = ev.Tool
		h.Approvals["requested"]++
	case saga.EvApproved:
		h.Approvals["approved"]++
		h.approved = ev
	case saga.EvDenied:
		h.Approvals["denied"]++
	case saga.EvApprovalLapsed:
		h.Approvals["lapsed"]++
	}
}

// approves reports whether the key's last approved event is of the
// request st starts, for its recorded arguments: its intent, and the
// digest of the request as the fold holds it, which st carries too.
func approves(h *keyHistory, st *saga.Event) bool {
	a, req := h.approved, h.Rec
	return a != nil && req != nil && req.Status == saga.StatusAwaitingApproval && req.Origin.IntentID == st.IntentID &&
		a.CallID == st.IntentID && string(a.ArgsHash) == string(req.ArgsHash) && string(st.ArgsHash) == string(req.ArgsHash)
}

func foldCompensationStarted(h *keyHistory, ev *saga.Event) {
	rec := h.Rec
	if rec != nil && rec.Status == saga.StatusCompensating {
		return // the saga ignores it: one compensation at a time
	}
	h.CompStarted++
	if rec != nil && rec.Status.InDoubt() {
		h.CompInDoubt++
	}
	if rec != nil && (rec.Status == saga.StatusStarted || rec.Status == saga.StatusUnknown) && ev.At < rec.PendingUntil && !ev.Forced {
		h.EarlyUndo = append(h.EarlyUndo, fmt.Sprintf("compensation %s at %d, %d ms before call %s's pending_ttl ended",
			ev.IntentID, ev.At, rec.PendingUntil-ev.At, rec.Origin.IntentID))
	}
	h.Comps = append(h.Comps, generation{ID: ev.IntentID, DK: saga.DownstreamKey(ev.DownstreamKey, ev.Tenant, ev.Tool, ev.Key), At: ev.At})
}

// settleGenerations copies the record's status to the call and the
// compensation it is about.
func settleGenerations(h *keyHistory) {
	rec := h.Rec
	if rec == nil {
		return
	}
	if n := len(h.Calls); n > 0 && h.Calls[n-1].ID == rec.Origin.IntentID {
		h.Calls[n-1].Status = rec.Status
	}
	if n := len(h.Comps); n > 0 && rec.Comp != nil && h.Comps[n-1].ID == rec.Comp.Origin.IntentID {
		h.Comps[n-1].Status = rec.Status
	}
	if n := len(h.Comps); n > 0 && rec.Comp == nil && h.Comps[n-1].Status != saga.StatusNotExecuted &&
		(rec.Status == saga.StatusStarted || rec.Status == saga.StatusUnknown || rec.Status == saga.StatusSucceeded) &&
		h.Comps[n-1].Status.InDoubt() {
		// The compensation came back not_executed: the key is as before it.
		h.Comps[n-1].Status = saga.StatusNotExecuted
	}
}
