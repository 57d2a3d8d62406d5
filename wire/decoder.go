package wire

import "github.com/atmostonce/toolexec/internal/mpread"

// The intent's msgpack, read field by field instead of by reflection
// (the reflective decode of every intent was 5 to 7% of the
// executor's CPU, and most of its allocations). It reads the forms a
// client writes; a form whose reflective result is not plain (an ext
// value, a map key that is not a str, a field of an unexpected type, a
// field given twice, a struct given as an array) makes it give up, and
// decodeIntentBytes decodes the message reflectively as before. So the
// intents accepted and rejected, with their reasons, do not change, and
// FuzzIntentDecodeMatchesReflection checks that the values are equal.

// One bit per field, to see a field given twice.
const (
	fieldV uint32 = 1 << iota
	fieldType
	fieldID
	fieldTenant
	fieldKey
	fieldTool
	fieldArgs
	fieldReplyTo
	fieldDeadline
	fieldScope
	fieldOutcome
	fieldResult
	fieldError
	fieldBy
	fieldReason
	fieldCallID
	fieldForce
)

// decodeIntentFast decodes a message that mpread.CheckShape passed, or reports
// false when it holds a form left to the reflective decoder.
func decodeIntentFast(value []byte) (*Intent, bool) {
	r := mpread.New(value)
	n, ok := r.MapLen()
	if !ok {
		return nil, false
	}
	in := &Intent{}
	var seen uint32
	for range n {
		k, ok := r.Key()
		if !ok {
			return nil, false
		}
		bit := intentFieldBit(string(k)) // no allocation: the compiler converts in place
		if bit == 0 {
			if !r.Skip() {
				return nil, false
			}
			continue
		}
		if seen&bit != 0 {
			return nil, false // last-wins, merge and panic cases: reflection's business
		}
		seen |= bit
		if !readIntentField(&r, in, bit) {
			return nil, false
		}
	}
	return in, true
}

func intentFieldBit(name string) uint32 {
	switch name {
	case "v":
		return fieldV
	case "type":
		return fieldType
	case "id":
		return fieldID
	case "tenant":
		return fieldTenant
	case "key":
		return fieldKey
	case "tool":
		return fieldTool
	case "args":
		return fieldArgs
	case "reply_to":
		return fieldReplyTo
	case "deadline_ms":
		return fieldDeadline
	case "scope":
		return fieldScope
	case "outcome":
		return fieldOutcome
	case "result":
		return fieldResult
	case "error":
		return fieldError
	case "by":
		return fieldBy
	case "reason":
		return fieldReason
	case "call_id":
		return fieldCallID
	case "force":
		return fieldForce
	}
	return 0
}

func readIntentField(r *mpread.Reader, in *Intent, bit uint32) bool {
	var ok bool
	switch bit {
	case fieldV:
		var v int64
		v, ok = r.Int64()
		in.V = int(v)
	case fieldDeadline:
		in.DeadlineMs, ok = r.Int64()
	case fieldArgs:
		in.Args, ok = r.Map()
	case fieldScope:
		in.Scope, ok = readScope(r)
	case fieldResult:
		in.Result, ok = r.Any()
	case fieldError:
		in.Error, ok = readErrorInfo(r)
	case fieldForce:
		in.Force, ok = r.Bool()
	case fieldType:
		in.Type, ok = r.IntentType()
	default:
		var s string
		s, ok = r.String()
		*intentString(in, bit) = s
	}
	return ok
}

func intentString(in *Intent, bit uint32) *string {
	switch bit {
	case fieldID:
		return &in.ID
	case fieldTenant:
		return &in.Tenant
	case fieldKey:
		return &in.Key
	case fieldTool:
		return &in.Tool
	case fieldReplyTo:
		return &in.ReplyTo
	case fieldOutcome:
		return &in.Outcome
	case fieldBy:
		return &in.By
	case fieldReason:
		return &in.Reason
	}
	return &in.CallID
}

// readScope reads a *Scope: nil as nil, a map field by field (a repeated
// field's last value wins, as in reflection).
func readScope(r *mpread.Reader) (*Scope, bool) {
	if r.Nil() {
		return nil, true
	}
	s := &Scope{}
	return s, readStringFields(r, func(name string) *string {
		switch name {
		case "run_id":
			return &s.RunID
		case "thread_id":
			return &s.ThreadID
		}
		return nil
	})
}

// readErrorInfo reads an *ErrorInfo like readScope reads a *Scope.
func readErrorInfo(r *mpread.Reader) (*ErrorInfo, bool) {
	if r.Nil() {
		return nil, true
	}
	e := &ErrorInfo{}
	return e, readStringFields(r, func(name string) *string {
		switch name {
		case "code":
			return &e.Code
		case "message":
			return &e.Message
		}
		return nil
	})
}

// readStringFields reads a map into a struct of string fields; field
// names the field's address, or nil to skip an unknown one.
func readStringFields(r *mpread.Reader, field func(string) *string) bool {
	n, ok := r.MapLen()
	if !ok {
		return false
	}
	for range n {
		k, ok := r.Key()
		if !ok {
			return false
		}
		p := field(string(k))
		if p == nil {
			if !r.Skip() {
				return false
			}
			continue
		}
		if *p, ok = r.String(); !ok {
			return false
		}
	}
	return true
}
