package console

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/atmostonce/toolexec/reconciler"
)

// stateWithinTTL is the rows' state of a key answered unknown whose
// pending_ttl has not passed: an executor call may still be running, so
// it needs nobody yet.
const stateWithinTTL = "within_ttl"

// counts are the figures at the top of the list, over every row of the
// scan: the sums of the reconciler's gauges over the partitions it covered.
type counts struct {
	InDoubt   int   // past their pending_ttl: toolexec_reconciler_keys_in_doubt
	Escalated int   // toolexec_reconciler_escalated_keys
	WithinTTL int   // answered unknown, within their pending_ttl
	OldestMs  int64 // the oldest in doubt's age: toolexec_reconciler_oldest_in_doubt_age_seconds
}

func countRows(now int64, rows []reconciler.Row) counts {
	var c counts
	for _, r := range rows {
		if r.State == stateWithinTTL {
			c.WithinTTL++
			continue
		}
		c.InDoubt++
		c.OldestMs = max(c.OldestMs, now-r.CalledAt)
		if r.State == "escalated" {
			c.Escalated++
		}
	}
	return c
}

// filter is the list's query: every field empty shows every key that
// needs a person.
type filter struct {
	Tool, Tenant, State, MinAge string
	minAge                      time.Duration
}

var ageChoices = []string{"", "1m", "5m", "1h", "24h"}

func filterOf(q url.Values) (filter, error) {
	f := filter{Tool: q.Get("tool"), Tenant: q.Get("tenant"), State: q.Get("state"), MinAge: q.Get("age")}
	if f.MinAge != "" {
		d, err := time.ParseDuration(f.MinAge)
		if err != nil || d < 0 {
			return f, fmt.Errorf("age %q is not a duration such as 5m or 1h", f.MinAge)
		}
		f.minAge = d
	}
	return f, nil
}

// keeps reports whether row r passes the filter. Without a state, only
// the keys that need a person pass.
func (f filter) keeps(now int64, r reconciler.Row) bool {
	switch {
	case f.State == "" && r.State == stateWithinTTL,
		f.State != "" && r.State != f.State,
		f.Tool != "" && r.Tool != f.Tool,
		f.Tenant != "" && r.Tenant != f.Tenant:
		return false
	}
	return time.Duration(now-r.CalledAt)*time.Millisecond >= f.minAge
}

type listRow struct {
	reconciler.Row
	AgeMs, PastMs int64
	Link          string
}

type listData struct {
	Op       operator
	Counts   counts
	Coverage string
	Filter   filter
	Problem  string
	Tools    []string
	Tenants  []string
	States   []string
	Ages     []string
	Rows     []listRow
	Total    int
}

// list is GET /console: the keys that need a person, oldest first.
func (c *Console) list(w http.ResponseWriter, r *http.Request, op operator) {
	now := c.cfg.Now().UnixMilli()
	rows := c.cfg.Backend.Rows()
	d := listData{Op: op, Counts: countRows(now, rows), Coverage: c.coverage(), Ages: ageChoices,
		States: []string{"escalated", "awaiting_facts", "retry", "probe", "compensate", "command_sent", stateWithinTTL}}
	f, err := filterOf(r.URL.Query())
	if err != nil {
		d.Problem = err.Error()
	}
	d.Filter = f
	d.Tools, d.Tenants = choices(c.cfg.Backend, rows)
	for _, row := range rows {
		if !f.keeps(now, row) {
			continue
		}
		link := "/console/key?" + url.Values{"tenant": {row.Tenant}, "key": {row.Key}}.Encode()
		d.Rows = append(d.Rows, listRow{Row: row, AgeMs: now - row.CalledAt, PastMs: now - row.Deadline, Link: link})
	}
	slices.SortFunc(d.Rows, func(a, b listRow) int { return cmp.Compare(b.AgeMs, a.AgeMs) })
	d.Total = len(rows) - d.Counts.WithinTTL
	c.render(w, http.StatusOK, "list", d)
}

// choices are the filter's options: every configured tool and every tool
// and tenant of the rows.
func choices(b Backend, rows []reconciler.Row) (toolNames, tenants []string) {
	for _, s := range b.Specs() {
		toolNames = append(toolNames, s.Name)
	}
	for _, r := range rows {
		toolNames = append(toolNames, r.Tool)
		tenants = append(tenants, r.Tenant)
	}
	slices.Sort(toolNames)
	slices.Sort(tenants)
	return slices.Compact(toolNames), slices.Compact(tenants)
}

// coverage says which partitions the figures cover, when not all.
func (c *Console) coverage() string {
	scanned, n := c.cfg.Backend.Coverage()
	switch {
	case len(scanned) == 0:
		return "This reconciler has not scanned a partition yet (it is joining its group or catching up with the event log): the list is empty until it has."
	case int32(len(scanned)) < n:
		return fmt.Sprintf("This reconciler's last scan covered partitions %v of %d; the keys of the other partitions are on the consoles of the other reconciler members.", scanned, n)
	}
	return ""
}
