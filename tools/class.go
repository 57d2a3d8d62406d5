package tools

import "strings"

// Class says how a tool's side effects can be deduplicated or undone. It
// decides what the executor may do when an outcome is Unknown, and how the
// reconciler investigates a call left in doubt. Its behaviour lives in one
// table (classes); the executor, the reconciler, the config check and the
// chaos harness ask a Class, never compare its name.
type Class string

const (
	// NativeKey tools honour our Idempotency-Key header, so an ambiguous
	// call may be sent again with the same key.
	NativeKey Class = "native_key"
	// Probe tools have a status endpoint: GET probe_url?key=<downstream key>.
	Probe Class = "probe"
	// Compensatable tools can be undone by another tool (compensate_with).
	Compensatable Class = "compensatable"
	// Irreversible tools are escalated to an operator when in doubt.
	Irreversible Class = "irreversible"
	// ReadOnly tools have no side effect; no dedup record is needed.
	ReadOnly Class = "read_only"
)

// Investigation is how a call (or compensation) of a tool that is left in
// doubt past its pending_ttl is settled.
type Investigation uint8

const (
	// InvestigateNone: the class keeps no record, so nothing is ever in
	// doubt (read_only).
	InvestigateNone Investigation = iota
	// InvestigateRetry: invoke the tool again under the same downstream
	// key; its answer settles the call.
	InvestigateRetry
	// InvestigateProbe: ask the tool's probe_url by the downstream key.
	InvestigateProbe
	// InvestigateCompensate: undo the call with compensate_with (a call in
	// doubt only; a compensation in doubt of such a tool is escalated).
	InvestigateCompensate
	// InvestigateEscalate: nothing can find out; an operator must.
	InvestigateEscalate
)

// classTraits is the behaviour of one class.
type classTraits struct {
	readOnly bool // every intent calls; no dedup record is kept
	// retriesAmbiguous: an outcome that may have reached the tool may be
	// sent again by the adapter, because the downstream dedupes on our
	// key (or there is no effect to repeat).
	retriesAmbiguous bool
	investigation    Investigation
	// destructive: an effect that can neither be looked up nor undone
	// (MCP's destructiveHint).
	destructive bool
}

// classes is the one table of class behaviour, in documentation order.
var classes = []struct {
	class  Class
	traits classTraits
}{
	{NativeKey, classTraits{retriesAmbiguous: true, investigation: InvestigateRetry}},
	{Probe, classTraits{investigation: InvestigateProbe}},
	{Compensatable, classTraits{investigation: InvestigateCompensate}},
	{Irreversible, classTraits{investigation: InvestigateEscalate, destructive: true}},
	{ReadOnly, classTraits{readOnly: true, retriesAmbiguous: true, investigation: InvestigateNone}},
}

func (c Class) traits() (classTraits, bool) {
	for _, e := range classes {
		if e.class == c {
			return e.traits, true
		}
	}
	return classTraits{}, false
}

// classNames lists the valid classes for error messages.
var classNames = func() string {
	names := make([]string, len(classes))
	for i, e := range classes {
		names[i] = string(e.class)
	}
	return strings.Join(names, ", ")
}()

// Valid reports whether c is one of the five classes.
func (c Class) Valid() bool {
	_, ok := c.traits()
	return ok
}

// ReadOnly reports whether the tool has no side effect: every intent
// calls it, and no dedup record is kept.
func (c Class) ReadOnly() bool {
	t, _ := c.traits()
	return t.readOnly
}

// RetriesAmbiguous reports whether an outcome that may have reached the
// tool (a timeout, a 5xx) may be retried by the adapter under the same
// key: only when the downstream dedupes on it, or there is no effect.
func (c Class) RetriesAmbiguous() bool {
	t, _ := c.traits()
	return t.retriesAmbiguous
}

// Investigation is how a call of this class in doubt is settled; an
// unknown class (a tool not in the configuration) is escalated.
func (c Class) Investigation() Investigation {
	t, ok := c.traits()
	if !ok {
		return InvestigateEscalate
	}
	return t.investigation
}

// Destructive reports whether the tool's effect can neither be looked up
// nor undone (MCP's destructiveHint).
func (c Class) Destructive() bool {
	t, _ := c.traits()
	return t.destructive
}

// NeedsProbeURL reports whether the class is investigated by a probe, so
// that its tools must (and only they may) configure probe_url.
func (c Class) NeedsProbeURL() bool { return c.Investigation() == InvestigateProbe }

// NeedsCompensateWith reports whether the class is undone by another tool,
// so that its tools must (and only they may) configure compensate_with.
func (c Class) NeedsCompensateWith() bool { return c.Investigation() == InvestigateCompensate }
