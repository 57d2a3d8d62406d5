package state

import (
	"strings"
	"testing"
)

// TestAuxPrefixesDisjoint: no auxiliary prefix starts another, so that
// one owner's ScanAux never returns another owner's keys.
func TestAuxPrefixesDisjoint(t *testing.T) {
	prefixes := []string{AuxReads, AuxAbortedTxns, AuxFacts, AuxInvestigations, AuxCompensationInvestigations}
	for i, a := range prefixes {
		for j, b := range prefixes {
			if i != j && strings.HasPrefix(b, a) {
				t.Errorf("aux prefix %q starts %q: a scan of the first meets the second's keys", a, b)
			}
		}
	}
}
