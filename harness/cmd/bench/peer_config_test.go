package main

import (
	"slices"
	"strings"
	"testing"
)

func TestPeerFlagParsesNamesInOrderWithoutDuplicates(t *testing.T) {
	c, err := parseFlags([]string{"--peer", "postgres, restate,postgres"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.peer.enabled() || !slices.Equal(c.peer.names, []string{"postgres", "restate"}) {
		t.Fatalf("names %v, want [postgres restate]", c.peer.names)
	}
}

func TestNoPeerFlagRunsNoPeer(t *testing.T) {
	c, err := parseFlags([]string{"--quick"})
	if err != nil {
		t.Fatal(err)
	}
	if c.peer.enabled() {
		t.Fatalf("peers enabled without --peer: %v", c.peer.names)
	}
}

func TestPeerFlagsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peer", "temporal"}, `unknown peer "temporal"`},
		{[]string{"--peer", "restate", "--peer-crash-calls", "0"}, "--peer-crash-calls"},
		{[]string{"--peer", "restate", "--peer-crash-calls", "5000"}, "--peer-crash-calls"},
		{[]string{"--port-base", "80"}, "--port-base"},
		{[]string{"--broker-pid", "-3"}, "--broker-pid"},
	} {
		_, err := parseFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
