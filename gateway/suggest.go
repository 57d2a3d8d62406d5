package gateway

import (
	"fmt"
	"net/http"
	"strings"
)

// maxSuggestNameBytes bounds the name a suggestion is computed for: the
// path's tool name comes from the caller, and the edit distance costs the
// product of the two lengths.
const maxSuggestNameBytes = 256

// unknownTool answers a tool that tenant may not see (or that does not
// exist) with a 404 that suggests the nearest tool tenant may see. Only the
// tenant's own tools are candidates: a tool outside its allow-list does not
// exist for it, here too.
func (g *Gateway) unknownTool(w http.ResponseWriter, tenant, name string) {
	detail := fmt.Sprintf("no tool %q", name)
	if s, ok := nearestTool(name, g.visibleTools(tenant)); ok {
		detail += fmt.Sprintf(": did you mean %s?", s)
	}
	writeProblem(w, http.StatusNotFound, codeUnknownTool, detail+"; GET /v1/tools lists the tools this token may call")
}

// nearestTool returns the tool whose name is closest to name by edit
// distance, when it is close enough to be a typo (at most a third of the
// name's length, and at least 1), or whose last dotted part is name (a
// name given without its namespace). Ties go to the first in name order.
func nearestTool(name string, visible []*tool) (string, bool) {
	if name == "" || len(name) > maxSuggestNameBytes {
		return "", false
	}
	limit := max(1, len([]rune(name))/3)
	best, bestDist := "", limit+1
	for _, t := range visible {
		cand := t.name()
		if i := strings.LastIndexByte(cand, '.'); i >= 0 && cand[i+1:] == name {
			return cand, true
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(cand)); d < bestDist {
			best, bestDist = cand, d
		}
	}
	return best, best != ""
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
