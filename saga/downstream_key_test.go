package saga

import (
	"regexp"
	"testing"
)

func TestPerKeyDownstreamKey(t *testing.T) {
	k := perKeyDownstreamKey("acme", "payments.charge", "intent-1")
	if k != perKeyDownstreamKey("acme", "payments.charge", "intent-1") {
		t.Fatal("not stable")
	}
	// A fixed vector, computed independently: changing the derivation
	// would orphan every key the downstreams already hold.
	if want := "tk1_acddfd671a0af7cc8a6b50026f791533873c08c9"; k != want {
		t.Errorf("DownstreamKey = %s, want %s", k, want)
	}
	if !regexp.MustCompile(`^tk1_[0-9a-f]{40}$`).MatchString(k) {
		t.Errorf("key %q is not tk1_ + 40 hex digits", k)
	}
	distinct := [][3]string{
		{"acme", "payments.charge", "intent-1"},
		{"other", "payments.charge", "intent-1"},
		{"acme", "payments.refund", "intent-1"},
		{"acme", "payments.charge", "intent-2"},
		{"a/b", "c", "k"}, {"a", "b/c", "k"},
		{"ab", "", "k"}, {"a", "b", "k"}, {"", "ab", "k"},
		{"a\x00b", "c", "k"}, {"a", "b\x00c", "k"},
		{"", "", ""},
	}
	seen := map[string][3]string{}
	for _, p := range distinct {
		k := perKeyDownstreamKey(p[0], p[1], p[2])
		if prev, dup := seen[k]; dup {
			t.Errorf("DownstreamKey%q == DownstreamKey%q", p, prev)
		}
		seen[k] = p
	}
}

func TestDownstreamKeyIsTheRecordedOneOrElseThePerKeyOne(t *testing.T) {
	call := callKey("acme", "pay", "k1", 1, 1000)
	if !regexp.MustCompile(`^tk2_[0-9a-f]{40}$`).MatchString(call) || call == callKey("acme", "pay", "k1", 2, 1000) || call == callKey("acme", "pay", "k1", 1, 1001) {
		t.Fatalf("per-call key %q: not tk2_ + 40 hex, or not new per call", call)
	}
	if got := DownstreamKey(call, "acme", "pay", "k1"); got != call {
		t.Errorf("recorded key: %s, want %s", got, call)
	}
	if got := DownstreamKey("", "acme", "payments.charge", "intent-1"); got != "tk1_acddfd671a0af7cc8a6b50026f791533873c08c9" {
		t.Errorf("no recorded key: %s, want the per-key key", got)
	}
}
