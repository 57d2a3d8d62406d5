package reconciler

import (
	"slices"
	"sync"

	"github.com/atmostonce/toolexec/saga"
)

// Bounds of what is kept of the tools' last errors: a few per tool, for a
// bounded number of tools (event-log tool names are not limited to the
// configuration's).
const (
	errorsPerTool  = 5
	maxErrorTools  = 1024
	maxErrorDetail = 512
)

// ToolError is one recent error of a tool as this reconciler saw it: an
// outcome the event log recorded as failed, unknown or not executed, or an
// investigation's ambiguous answer.
type ToolError struct {
	At      int64  `json:"at"` // unix ms
	Tenant  string `json:"tenant"`
	Key     string `json:"key"`
	Source  string `json:"source"` // "outcome", "compensation", "retry", "probe"
	Status  string `json:"status"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// toolErrors keeps the last errorsPerTool errors of each tool, newest
// first, in memory: a restart forgets them (the view resumes from its
// checkpoint and does not fold old outcomes again). Safe for concurrent
// use: the loop adds, the console reads.
type toolErrors struct {
	mu     sync.Mutex
	byTool map[string][]ToolError
}

func (t *toolErrors) add(tool string, e ToolError) {
	if len(e.Message) > maxErrorDetail {
		e.Message = e.Message[:maxErrorDetail] + "..."
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byTool == nil {
		t.byTool = map[string][]ToolError{}
	}
	list, known := t.byTool[tool]
	if !known && len(t.byTool) >= maxErrorTools {
		return
	}
	list = append([]ToolError{e}, list...)
	if len(list) > errorsPerTool {
		list = list[:errorsPerTool]
	}
	t.byTool[tool] = list
}

func (t *toolErrors) of(tool string) []ToolError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.byTool[tool])
}

// noteOutcome keeps ev when it records a call or compensation that did
// not succeed. tool is the key's tool, or its compensating tool.
func (t *toolErrors) noteOutcome(ev *saga.Event, tool string) {
	source := "outcome"
	switch ev.Kind {
	case saga.EvOutcome:
	case saga.EvCompensationOutcome:
		source = "compensation"
	default:
		return
	}
	if ev.Status == saga.StatusSucceeded || ev.By != "" {
		return // a success, or an operator's or the reconciler's word
	}
	e := ToolError{At: ev.At, Tenant: ev.Tenant, Key: ev.Key, Source: source, Status: ev.Status.String()}
	if ev.Err != nil {
		e.Code, e.Message = ev.Err.Code, ev.Err.Message
	}
	t.add(tool, e)
}

// ToolErrors returns the last errors of tool this member saw since it
// started, newest first.
func (r *Reconciler) ToolErrors(tool string) []ToolError { return r.errs.of(tool) }

// noteAnswer keeps an investigation's answer that did not settle the key
// (the round failed).
func (r *Reconciler) noteAnswer(res result) {
	r.errs.add(res.job.subj.Tool, ToolError{At: r.now(), Tenant: res.job.subj.Tenant, Key: res.job.subj.Key,
		Source: res.job.kind.String(), Status: res.out.Status.String(), Code: res.out.Code, Message: res.out.Message})
}

// errorTool is the tool an outcome event is about: the compensating tool
// for a compensation's outcome.
func errorTool(ev *saga.Event, rec *saga.Record) string {
	if ev.Kind == saga.EvCompensationOutcome && rec != nil && rec.Comp != nil {
		return rec.Comp.Tool
	}
	if rec != nil {
		return rec.Tool
	}
	return ev.Tool
}
