package sim

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A seed chooses the same parameters, fault subset and fault schedule on
// every replay: what makes a failing seed worth replaying.
func TestASeedChoosesTheSameRunAgain(t *testing.T) {
	cfg := Config{Seed: 42}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	a, b := choose(cfg), choose(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 42 chose %+v, then %+v", a, b)
	}
	w := &world{cfg: cfg, p: a}
	x, y := newInjector(w), newInjector(w)
	if !slices.Equal(x.kinds, y.kinds) {
		t.Fatalf("request kinds %v, then %v", x.kinds, y.kinds)
	}
	for i := 0; i < 200; i++ {
		if dx, dy := x.draw(), y.draw(); dx != dy {
			t.Fatalf("draw %d: %+v, then %+v", i, dx, dy)
		}
	}
	other := Config{Seed: 43}
	_ = other.defaults()
	if reflect.DeepEqual(choose(other), a) {
		t.Fatal("seeds 42 and 43 chose the same run")
	}
}

// Every request kind of the table has codes, each from a named source;
// with CodesAny every kind also gets UNKNOWN_SERVER_ERROR (once), and
// with CodesDocumented only the kinds whose documentation lists it.
func TestCodeTable(t *testing.T) {
	for _, k := range requestKinds() {
		doc := codesFor(k, CodesDocumented)
		if len(doc) == 0 && k != kmsg.GetTelemetrySubscriptions && k != kmsg.PushTelemetry {
			t.Errorf("%s: no documented code", k.Name())
		}
		seen := map[int16]bool{}
		for _, d := range doc {
			if seen[d.err.Code] || d.src == fromAnyRequest || d.src == 0 {
				t.Errorf("%s: code %s listed twice or without its source (%v)", k.Name(), d.err.Message, d.src)
			}
			seen[d.err.Code] = true
		}
		all := codesFor(k, CodesAny)
		n := 0
		for _, d := range all {
			if d.err.Code == kerr.UnknownServerError.Code {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s with any code: UNKNOWN_SERVER_ERROR %d times, want once", k.Name(), n)
		}
	}
	hasUSE := func(k kmsg.Key) bool {
		return slices.ContainsFunc(codesFor(k, CodesDocumented), func(d documented) bool { return d.err == kerr.UnknownServerError })
	}
	if hasUSE(kmsg.EndTxn) || !hasUSE(kmsg.Fetch) {
		t.Fatal("Kafka documents UNKNOWN_SERVER_ERROR for Fetch, not for EndTxn")
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.TxnOffsetCommit, kmsg.EndTxn,
		kmsg.InitProducerID, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.OffsetCommit,
		kmsg.OffsetFetch, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.DeleteRecords, kmsg.DescribeConfigs, kmsg.DescribeProducers,
		kmsg.DescribeTransactions, kmsg.ListTransactions} {
		if !slices.Contains(requestKinds(), k) {
			t.Errorf("%s is not in the table", k.Name())
		}
	}
}
