package gateway

import (
	"fmt"
	"net/http"

	"github.com/atmostonce/toolexec/tools"
)

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

// nearestTool is the visible tool whose name is nearest to name
// (tools.NearestName).
func nearestTool(name string, visible []*tool) (string, bool) {
	names := make([]string, len(visible))
	for i, t := range visible {
		names[i] = t.name()
	}
	return tools.NearestName(name, names)
}
