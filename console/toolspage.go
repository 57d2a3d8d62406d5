package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/tools"
)

// toolRow is one tool on the tools page.
type toolRow struct {
	tools.Spec
	Started   int // calls that may still be running (within their pending_ttl)
	InDoubt   int // past their pending_ttl
	Escalated int
	Errors    []reconciler.ToolError
	Link      string // the list filtered by the tool
}

type toolsData struct {
	Op       operator
	Coverage string
	Tools    []toolRow
}

// toolsPage is GET /console/tools: every configured tool, its settings, its
// keys in doubt and its last errors.
func (c *Console) toolsPage(w http.ResponseWriter, _ *http.Request, op operator) {
	b := c.cfg.Backend
	started := b.Started()
	d := toolsData{Op: op, Coverage: c.coverage()}
	byTool := map[string]*toolRow{}
	for _, s := range b.Specs() {
		s.Auth, s.InputSchema = nil, nil // credentials and schemas are not the operator's business here
		s.URL, s.ProbeURL = redactURL(s.URL), redactURL(s.ProbeURL)
		d.Tools = append(d.Tools, toolRow{Spec: s, Started: started[s.Name], Errors: b.ToolErrors(s.Name),
			Link: "/console?" + url.Values{"tool": {s.Name}}.Encode()})
	}
	for i := range d.Tools {
		byTool[d.Tools[i].Name] = &d.Tools[i]
	}
	for _, r := range b.Rows() {
		t, ok := byTool[r.Tool]
		if !ok || r.State == stateWithinTTL {
			continue
		}
		t.InDoubt++
		if r.State == "escalated" {
			t.Escalated++
		}
	}
	c.render(w, http.StatusOK, "tools", d)
}

// redactURL shows where a tool is without what a URL may carry in secret
// (user info, a query).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return strings.SplitN(raw, "?", 2)[0]
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
