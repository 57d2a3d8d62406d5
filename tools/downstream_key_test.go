package tools

import (
	"regexp"
	"testing"
)

func TestDownstreamKey(t *testing.T) {
	k := DownstreamKey("acme", "payments.charge", "intent-1")
	if k != DownstreamKey("acme", "payments.charge", "intent-1") {
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
		k := DownstreamKey(p[0], p[1], p[2])
		if prev, dup := seen[k]; dup {
			t.Errorf("DownstreamKey%q == DownstreamKey%q", p, prev)
		}
		seen[k] = p
	}
}
