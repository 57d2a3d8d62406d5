package wire

// What is read from an intent that cannot be decoded, so that its
// rejection can still be answered.

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/mpread"
	"github.com/vmihailenco/msgpack/v5"
)

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

// salvageLarge reads the identifying string fields at the top level of a
// value too large to decode; see salvageStrings.
func salvageLarge(value []byte, rej *Reject) {
	if len(value) == 0 || !mpread.IsMapCode(value[0]) || mpread.CheckShape(value, maxNesting) != nil {
		return
	}
	salvageStrings(value, rej)
}

// salvageStrings reads the identifying string fields at the top level of
// a map that cannot be decoded (too large, a field of the wrong type, an
// extension where a value was expected), so that its rejection can still
// be answered: every intent whose id can be read gets an answer, on its
// reply_to. It decodes only short strings and skips everything else
// without interpreting it. The caller has run the shape walk
// (mpread.CheckShape), which bounds what skipping can cost.
func salvageStrings(value []byte, rej *Reject) {
	dec := msgpack.NewDecoder(bytes.NewReader(value))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return
	}
	partial := &Intent{}
	fields := map[string]*string{"id": &partial.ID, "tenant": &partial.Tenant, "key": &partial.Key,
		"tool": &partial.Tool, "reply_to": &partial.ReplyTo, "type": &partial.Type}
	defer rej.from(partial) // what was read before a field that cannot be skipped
	for i := 0; i < n; i++ {
		name, err := decodeShortString(dec)
		if err != nil && !errors.Is(err, errNotShortString) {
			return
		}
		dst, want := fields[name]
		if err != nil || !want {
			if dec.Skip() != nil {
				return
			}
			continue
		}
		switch s, err := decodeShortString(dec); {
		case err == nil:
			*dst = s
		case !errors.Is(err, errNotShortString):
			return
		}
	}
}

// decodeShortString decodes a string of at most MaxKeyBytes; anything
// else is skipped and is an error.
func decodeShortString(dec *msgpack.Decoder) (string, error) {
	code, err := dec.PeekCode()
	if err != nil {
		return "", err
	}
	if !isStrCode(code) {
		if err := dec.Skip(); err != nil {
			return "", err
		}
		return "", errNotShortString
	}
	s, err := dec.DecodeString()
	if err != nil {
		return "", err
	}
	if len(s) > MaxKeyBytes {
		return "", errNotShortString
	}
	return s, nil
}

var errNotShortString = errors.New("wire: not a short string")

func isStrCode(c byte) bool { return (c >= 0xa0 && c <= 0xbf) || c == 0xd9 || c == 0xda || c == 0xdb }
