package saga_test

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
)

// TestRefusalsCarryTheirCode: the refusals a caller acts on carry their
// kind in the answer's error (wire.Result.Refusal reads it), and still
// name it in the message for readers of answers without it; the other
// refusals of a command carry none.
func TestRefusalsCarryTheirCode(t *testing.T) {
	env := func(at int64, inFlight bool) saga.Env {
		return saga.Env{Now: t0 + at, Policy: policies, InFlight: inFlight}
	}
	var started *saga.Record
	for _, ev := range saga.Decide(nil, call("A", "x"), env(0, false)).Events {
		started = saga.Apply(started, ev)
	}
	for name, c := range map[string]struct {
		rec      *saga.Record
		in       saga.Input
		inFlight bool
		refusal  string
		text     string
	}{
		"compensate without a record": {in: compensate("C"), refusal: codes.RefusalNoRecord, text: codes.RefusalNoRecordText},
		"approve without a record":    {in: approveCmd("P"), refusal: codes.RefusalNoRecord, text: codes.RefusalNoRecordText},
		"lookup without a record":     {in: lookup("L", "charge"), refusal: codes.RefusalNoRecord, text: codes.RefusalNoRecordText},
		"unforced compensate in the pending_ttl": {rec: started, in: unforced(compensate("C")),
			refusal: codes.RefusalMayStillLand, text: codes.RefusalMayStillLandText},
		"unforced resolve in the pending_ttl": {rec: started, in: unforced(resolve("R", saga.StatusNotExecuted, "")),
			refusal: codes.RefusalMayStillLand, text: codes.RefusalMayStillLandText},
		"compensate while the call runs": {rec: started, in: compensate("C"), inFlight: true},
	} {
		d := saga.Decide(c.rec.Clone(), c.in, env(200, c.inFlight))
		if len(d.Answers) != 1 || d.Answers[0].Err == nil {
			t.Fatalf("%s: answers %+v, want one refusal", name, d.Answers)
		}
		e := d.Answers[0].Err
		if d.Answers[0].Status != codes.StatusRejected || e.Code != codes.ReasonInvalidCommand || e.Refusal != c.refusal {
			t.Errorf("%s: %s %+v, want rejected invalid_command with refusal %q", name, d.Answers[0].Status, e, c.refusal)
		}
		if !strings.Contains(e.Message, c.text) {
			t.Errorf("%s: message %q does not name %q", name, e.Message, c.text)
		}
	}
}
