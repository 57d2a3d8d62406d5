package tools

import "strings"

// maxSuggestNameBytes bounds the name a suggestion is computed for: the
// name comes from the caller, and the edit distance costs the product of
// the two lengths.
const maxSuggestNameBytes = 256

// NearestName returns the name among names (in the order given: ties go
// to the first) closest to name by edit distance, ignoring case, when it
// is close enough to be a typo (at most a third of the name's length, and
// at least 1), or whose last dotted part is name (a name given without its
// namespace). It answers "did you mean" for an unknown tool: the gateway's
// 404 and the executor's unknown_tool rejection.
func NearestName(name string, names []string) (string, bool) {
	if name == "" || len(name) > maxSuggestNameBytes {
		return "", false
	}
	n := len([]rune(name))
	limit := max(1, n/3)
	lower := strings.ToLower(name)
	best, bestDist := "", limit+1
	for _, cand := range names {
		if i := strings.LastIndexByte(cand, '.'); i >= 0 && cand[i+1:] == name {
			return cand, true
		}
		// The distance is at least the difference of the lengths: most
		// candidates are ruled out without computing it.
		if diff := len([]rune(cand)) - n; diff >= bestDist || -diff >= bestDist {
			continue
		}
		if d := editDistance(lower, strings.ToLower(cand)); d < bestDist {
			best, bestDist = cand, d
		}
	}
	return best, best != ""
}

// Nearest is NearestName over the registered tools tenant may call (in
// name order).
func (r *Registry) Nearest(tenant, name string) (string, bool) {
	var names []string
	for _, s := range r.Specs() {
		if s.Allows(tenant) {
			names = append(names, s.Name)
		}
	}
	return NearestName(name, names)
}

// editDistance is the Levenshtein distance of a and b over runes, in one
// row of memory.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	row := make([]int, len(rb)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			diag, row[j] = row[j], min(row[j]+1, row[j-1]+1, diag+cost)
		}
	}
	return row[len(rb)]
}
