package gateway

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire/jsonview"
)

func record(status saga.Status) *saga.Record {
	res, _ := msgpack.Marshal(map[string]any{"refund_id": "rf_1"})
	return &saga.Record{Tenant: "acme", Key: "k", Tool: "t", Status: status, Origin: saga.Waiter{IntentID: "i1"},
		Attempt: 1, CalledAt: 1000, PendingUntil: 5000, CompletedAt: 1200, ExpiresAt: 100000, Result: res}
}

// The answer GET gives for each state of a key, and whether it is final.
func TestRecordAnswer(t *testing.T) {
	tests := []struct {
		name   string
		rec    *saga.Record
		now    int64
		status string
		state  answerState
	}{
		{"succeeded", record(saga.StatusSucceeded), 2000, codes.StatusSucceeded, stateDone},
		{"failed", record(saga.StatusFailed), 2000, codes.StatusFailed, stateDone},
		{"not executed", record(saga.StatusNotExecuted), 2000, codes.StatusNotExecuted, stateDone},
		{"started within its pending_ttl", record(saga.StatusStarted), 4999, StatusRunning, stateRunning},
		{"started past its pending_ttl", record(saga.StatusStarted), 5000, codes.StatusPending, stateInDoubt},
		{"unknown", record(saga.StatusUnknown), 2000, codes.StatusPending, stateInDoubt},
		{"compensating", record(saga.StatusCompensating), 2000, codes.StatusCompensationPending, stateInDoubt},
		{"compensation unknown", record(saga.StatusCompensationUnknown), 2000, codes.StatusCompensationPending, stateInDoubt},
		{"compensated", record(saga.StatusCompensated), 2000, codes.StatusCompensated, stateDone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, state := recordAnswer(tc.rec, tc.now)
			if res.Status != tc.status || state != tc.state {
				t.Fatalf("got %s/%d, want %s/%d", res.Status, state, tc.status, tc.state)
			}
			if res.OriginalIntentID != "i1" || res.OriginalCalledAt != 1000 || res.Tenant != "acme" || res.Key != "k" {
				t.Fatalf("fields: %+v", res)
			}
			if (state == stateInDoubt) != (res.Error != nil && res.Error.Code == "in_doubt") {
				t.Fatalf("in-doubt error: %+v", res.Error)
			}
			if tc.status == codes.StatusSucceeded {
				if m, _ := jsonview.Value(res.Result).(map[string]any); m["refund_id"] != "rf_1" || !res.WasReplay {
					t.Fatalf("result %v replay %v", jsonview.Value(res.Result), res.WasReplay)
				}
			}
		})
	}
}

// A settled key past its retention is free again: GET says 404. A key in
// doubt never expires.
func TestExpired(t *testing.T) {
	if !expired(nil, 0) || !expired(record(saga.StatusSucceeded), 100000) || expired(record(saga.StatusSucceeded), 99999) {
		t.Fatal("settled keys expire at ExpiresAt")
	}
	if expired(record(saga.StatusUnknown), 1<<40) {
		t.Fatal("a key in doubt expired")
	}
}

// A key awaiting approval, read from the log (an executor without
// lookups): pending with awaiting_approval and the request's deadline.
func TestRecordAnswerAwaitingApproval(t *testing.T) {
	rec := record(saga.StatusAwaitingApproval)
	rec.Approval = &saga.Approval{RequestedAt: 900, Until: 7000}
	res, state := recordAnswer(rec, 2000)
	if state != stateInDoubt || !res.AwaitingApproval() || res.ApprovalUntil != 7000 || retryAfter(res, retryInDoubt) != retryApproval {
		t.Fatalf("got %+v (state %d)", res, state)
	}
}
