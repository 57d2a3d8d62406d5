package tools

// Class says how a tool's side effects can be deduplicated or undone. It
// decides what the executor may do when an outcome is Unknown.
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

// classNames lists the valid classes for error messages.
const classNames = "native_key, probe, compensatable, irreversible, read_only"

// Valid reports whether c is one of the five classes.
func (c Class) Valid() bool {
	switch c {
	case NativeKey, Probe, Compensatable, Irreversible, ReadOnly:
		return true
	}
	return false
}
