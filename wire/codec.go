package wire

import (
	"fmt"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/mpread"
	"github.com/atmostonce/toolexec/internal/mpstruct"
)

// Source says which topic an intent came from; it decides which types are
// acceptable.
type Source uint8

const (
	FromIntents Source = iota + 1
	FromControl
)

// DecodeIntent decodes and validates one intent record. recordKey is the
// Kafka key it arrived with. On failure the returned *Reject carries the
// reason and whatever fields could be salvaged; it never panics on any
// input (see FuzzDecodeIntent).
func DecodeIntent(value []byte, recordKey []byte, src Source) (*Intent, *Reject) {
	if len(value) > MaxMessageBytes {
		rej := reject(codes.ReasonOversized, "message is %d bytes, the limit is %d", len(value), MaxMessageBytes)
		salvageLarge(value, rej)
		return nil, rej
	}
	in, rej := decodeIntentBytes(value)
	if rej != nil {
		return nil, rej
	}
	if rej := validateIntent(in, src); rej != nil {
		return nil, rej.from(in)
	}
	if rej := checkRecordKey(in, recordKey); rej != nil {
		return nil, rej.from(in)
	}
	return in, nil
}

// The intent's and the answer's msgpack, read and written field by field
// by their planned codecs (internal/mpstruct) rather than by reflection:
// decoding every intent reflectively was 5 to 7% of the executor's CPU
// and most of its allocations, encoding every answer 4%. An intent the
// plan declines (an ext value, a map key that is not a str, a field of an
// unexpected type, a field given twice, a struct given as an array) is
// decoded reflectively as before, so the intents accepted and rejected,
// with their reasons, do not change; an answer whose result is anything
// but nil or a msgpack.RawMessage (the executor stores results as
// msgpack) is encoded reflectively, since omitempty looks through an
// interface. FuzzIntentDecodeMatchesReflection and
// FuzzResultEncodeMatchesReflection hold the two together.
var (
	intentCodec = mpstruct.For[Intent]()
	resultCodec = mpstruct.For[Result]()
)

// decodeIntentFast decodes a message that mpread.CheckShape passed, or reports
// false when it holds a form left to the reflective decoder.
func decodeIntentFast(value []byte) (*Intent, bool) {
	in := &Intent{}
	if !intentCodec.Unmarshal(value, in) {
		return nil, false
	}
	return in, true
}

// encodeResult encodes r, or reports false when r is left to reflection.
func encodeResult(r *Result) ([]byte, bool, error) {
	b, ok, err := resultCodec.Marshal(r)
	if err != nil {
		return nil, ok, fmt.Errorf("wire: encode result: %w", err)
	}
	return b, ok, nil
}

func decodeIntentBytes(value []byte) (*Intent, *Reject) {
	// Wire contract v1 messages are maps; msgpack would otherwise decode an
	// array positionally into the struct.
	if len(value) == 0 || !mpread.IsMapCode(value[0]) {
		return nil, reject(codes.ReasonUndecodable, "not a msgpack intent map")
	}
	// Refuse what would make the decoder allocate or recurse without
	// bound before anything decodes it (salvage included).
	if err := mpread.CheckShape(value, maxNesting); err != nil {
		return nil, reject(codes.ReasonUndecodable, "not a msgpack intent map: %v", err)
	}
	if in, ok := decodeIntentFast(value); ok {
		return in, nil
	}
	if mpread.ExtUnder(value, "args") {
		rej := reject(codes.ReasonUndecodable, "not a msgpack intent map: args is a msgpack extension, not a map")
		salvageStrings(value, rej)
		return nil, rej
	}
	var in Intent
	if err := unmarshal(value, &in); err != nil {
		rej := reject(codes.ReasonUndecodable, "not a msgpack intent map: %v", err)
		salvage(value, rej)
		return nil, rej
	}
	return &in, nil
}

// salvage reads the string fields it can from a message whose typed decode
// failed, so that the rejection can still be answered: the top-level
// strings whatever the other fields hold (salvageStrings), and, when the
// map decodes, the field whose type is wrong (invalid_field).
func salvage(value []byte, rej *Reject) {
	var m map[string]any
	if unmarshal(value, &m) == nil {
		rej.Reason = codes.ReasonInvalidField
		if f := wrongTypeField(m); f != "" {
			rej.Detail = fmt.Sprintf("field %s has the wrong type (%s)", f, rej.Detail)
		}
	}
	salvageStrings(value, rej)
}

// wrongTypeField names the first field of m whose msgpack type the
// Intent cannot hold, or "" when none is found at the top level.
func wrongTypeField(m map[string]any) string {
	for _, k := range []string{"v", "type", "id", "tenant", "key", "tool", "args", "reply_to", "deadline_ms", "scope", "outcome", "error", "by", "reason", "call_id", "downstream_key", "args_digest"} {
		v, ok := m[k]
		if !ok || v == nil {
			continue
		}
		switch k {
		case "v", "deadline_ms":
			switch v.(type) {
			case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
				continue
			}
		case "args", "scope", "error":
			if _, ok := v.(map[string]any); ok {
				continue
			}
		default:
			if _, ok := v.(string); ok {
				continue
			}
		}
		return k
	}
	return ""
}

func validateIntent(in *Intent, src Source) *Reject {
	if rej := validateHeader(in, src); rej != nil {
		return rej
	}
	if rej := validateIdentity(in); rej != nil {
		return rej
	}
	if rej := checkCopiedFields(in); rej != nil {
		return rej
	}
	switch in.Type {
	case TypeCall, TypeLookup:
		return validateCall(in)
	case TypeResolve:
		return validateResolve(in)
	case TypeApprove, TypeDeny:
		return validateDecision(in)
	}
	return nil
}

func validateHeader(in *Intent, src Source) *Reject {
	switch {
	case in.V == 0:
		return reject(codes.ReasonMissingField, "field v is required (1)")
	case in.V != Version:
		return reject(codes.ReasonUnsupportedVersion, "v=%d is not supported, this executor reads v=%d", in.V, Version)
	case in.Type == "":
		return reject(codes.ReasonMissingField, "field type is required")
	case Operator(in.Type) && src == FromIntents:
		return reject(codes.ReasonResolveOnIntents, "%s is accepted only on the control topic", in.Type)
	case in.Force && src == FromIntents:
		return reject(codes.ReasonResolveOnIntents, "force is accepted only on the control topic")
	case in.Type != TypeCall && in.Type != TypeCompensate && in.Type != TypeLookup && !Operator(in.Type):
		return reject(codes.ReasonInvalidField, "field type %q is not call, compensate, resolve, lookup, approve or deny", clip(in.Type))
	}
	return nil
}

func validateIdentity(in *Intent) *Reject {
	if in.Tenant == "" {
		in.Tenant = DefaultTenant
	}
	switch {
	case in.ID == "":
		return reject(codes.ReasonMissingField, "field id is required")
	case len(in.ID) > MaxIDBytes || !utf8.ValidString(in.ID):
		return reject(codes.ReasonInvalidField, "field id must be valid UTF-8 of at most %d bytes", MaxIDBytes)
	case !ValidTenant(in.Tenant):
		return reject(codes.ReasonInvalidField, "field tenant %q must match [a-z0-9_-]{1,64}", clip(in.Tenant))
	case in.Key == "":
		return reject(codes.ReasonMissingField, "field key is required")
	case len(in.Key) > MaxKeyBytes:
		return reject(codes.ReasonOversized, "field key is %d bytes, the limit is %d", len(in.Key), MaxKeyBytes)
	case CheckKey(in.Key) != nil:
		return reject(codes.ReasonInvalidField, "field key: %v", CheckKey(in.Key))
	case len(in.ReplyTo) > MaxReplyToBytes:
		return reject(codes.ReasonBadReplyTo, "field reply_to is longer than %d bytes", MaxReplyToBytes)
	case len(in.CallID) > MaxIDBytes:
		return reject(codes.ReasonInvalidField, "field call_id is longer than %d bytes", MaxIDBytes)
	case len(in.DownstreamKey) > MaxIDBytes:
		return reject(codes.ReasonInvalidField, "field downstream_key is longer than %d bytes", MaxIDBytes)
	case in.DownstreamKey != "" && (in.Type != TypeResolve || in.CallID == ""):
		return reject(codes.ReasonInvalidField, "field downstream_key is accepted only on a resolve that names its call (call_id)")
	}
	return nil
}

func validateCall(in *Intent) *Reject {
	switch {
	case in.Tool == "":
		return reject(codes.ReasonMissingField, "field tool is required for a %s", in.Type)
	case len(in.Tool) > MaxToolBytes:
		return reject(codes.ReasonInvalidField, "field tool is longer than %d bytes", MaxToolBytes)
	}
	return nil
}

func validateResolve(in *Intent) *Reject {
	switch in.Outcome {
	case "":
		return reject(codes.ReasonMissingField, "field outcome is required for a resolve")
	case codes.StatusSucceeded, codes.StatusFailed, codes.StatusNotExecuted, codes.StatusCompensated, codes.StatusCompensationFailed:
		return nil
	}
	return reject(codes.ReasonInvalidField, "field outcome %q is not succeeded, failed, not_executed, compensated or compensation_failed", clip(in.Outcome))
}

// validateDecision checks an approve or deny: a person decides, and says
// why (both are recorded in the event log).
func validateDecision(in *Intent) *Reject {
	switch {
	case in.By == "":
		return reject(codes.ReasonMissingField, "field by (who decides) is required for %s", in.Type)
	case in.Reason == "":
		return reject(codes.ReasonMissingField, "field reason is required for %s", in.Type)
	case in.ArgsDigest != "" && !validDigest(in.ArgsDigest):
		return reject(codes.ReasonInvalidField, "field args_digest must be 64 lower-case hex digits (the SHA-256 of the canonical arguments)")
	}
	return nil
}

// validDigest reports whether s is a SHA-256 in lower-case hex.
func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// checkRecordKey enforces that the Kafka key names the same tenant and key
// as the body: routing trusts the Kafka key, the decision trusts the body,
// and a mismatch would let a tenant read another tenant's stored answer.
func checkRecordKey(in *Intent, recordKey []byte) *Reject {
	if recordKey == nil {
		return reject(codes.ReasonMissingField, "the record has no Kafka key; it must be %q", in.RoutingKey())
	}
	tenant, key, ok := SplitRoutingKey(string(recordKey))
	switch {
	case !ok:
		return reject(codes.ReasonKeyMismatch, "the Kafka key %q is not <tenant>/<key>", clip(string(recordKey)))
	case tenant != in.Tenant:
		return reject(codes.ReasonWrongTenant, "the Kafka key names tenant %q but the intent says %q", clip(tenant), clip(in.Tenant))
	case key != in.Key:
		return reject(codes.ReasonKeyMismatch, "the Kafka key names key %q but the intent says %q", clip(key), clip(in.Key))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// EncodeIntent encodes an intent as a msgpack map with string keys.
func EncodeIntent(in *Intent) ([]byte, error) {
	if in.V == 0 {
		in.V = Version
	}
	return marshal(in, "intent")
}

// EncodeResult encodes an answer.
func EncodeResult(r *Result) ([]byte, error) {
	if r.V == 0 {
		r.V = Version
	}
	if b, ok, err := encodeResult(r); ok {
		return b, err
	}
	return marshal(r, "result")
}

// marshal encodes a record of the wire (what names it in an error)
// reflectively.
func marshal(v any, what string) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", what, err)
	}
	return b, nil
}

// DecodeResult decodes an answer; unknown fields are ignored.
func DecodeResult(b []byte) (*Result, error) { return decodeMap[Result](b, "result") }

// EncodeDeadLetter encodes a dead-letter record.
func EncodeDeadLetter(d *DeadLetter) ([]byte, error) {
	if d.V == 0 {
		d.V = Version
	}
	return marshal(d, "dead letter")
}

// DecodeDeadLetter decodes a dead-letter record.
func DecodeDeadLetter(b []byte) (*DeadLetter, error) {
	return decodeMap[DeadLetter](b, "dead letter", "headers")
}

// decodeMap decodes a record of the wire's (what names it in an error)
// reflectively, after the checks every reader of the wire makes: a map,
// a shape that cannot make the decoder allocate or recurse without bound,
// and no extension under the keys of mapFields (mpread.ExtUnder says why).
func decodeMap[T any](b []byte, what string, mapFields ...string) (*T, error) {
	if len(b) == 0 || !mpread.IsMapCode(b[0]) {
		return nil, fmt.Errorf("wire: decode %s: not a msgpack map", what)
	}
	if err := mpread.CheckShape(b, maxNesting); err != nil {
		return nil, fmt.Errorf("wire: decode %s: %w", what, err)
	}
	for _, f := range mapFields {
		if mpread.ExtUnder(b, f) {
			return nil, fmt.Errorf("wire: decode %s: %s is a msgpack extension, not a map", what, f)
		}
	}
	var v T
	if err := unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("wire: decode %s: %w", what, err)
	}
	return &v, nil
}

// unmarshal is msgpack.Unmarshal that turns a panic inside the decoder
// into an error. Why: msgpack v5 panics on some malformed input, such as
// a map that repeats a key whose field is an interface (the second value
// is decoded into the first one's unaddressable copy: found by
// FuzzDecodeResult). Intents, answers and dead letters come from the
// wire: a reader gets an error, and an executor never stops on one.
func unmarshal(b []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed msgpack: %v", p)
		}
	}()
	return msgpack.Unmarshal(b, v)
}
