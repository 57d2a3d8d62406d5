package wire

import (
	"fmt"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/internal/msgpack/mpstruct"
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
// by their planned codecs (internal/msgpack/mpstruct) rather than by reflection:
// decoding every intent reflectively was 5 to 7% of the executor's CPU
// and most of its allocations, encoding every answer 4%. An intent the
// plan declines (an ext value, a map key that is not a str, a field of an
// unexpected type, a field given twice, a struct given as an array) is
// decoded reflectively, so the intents accepted and rejected,
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
