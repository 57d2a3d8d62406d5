package wire

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/mpwrite"
)

// The answer's msgpack, written field by field instead of by reflection
// (encoding every answer reflectively was 4% of the executor's
// CPU). The bytes are the reflective encoder's own
// (FuzzResultEncodeMatchesReflection); the order and names are Result's.
// A Result whose result is anything but nil or a msgpack.RawMessage (the
// executor stores results as msgpack) is encoded reflectively: omitempty
// looks through an interface (an empty string, a zero number, an empty
// map are all left out), which only reflection reproduces exactly.

// encodeResult encodes r, or reports false when r is left to reflection.
func encodeResult(r *Result) ([]byte, bool, error) {
	raw, isRaw := r.Result.(msgpack.RawMessage)
	if r.Result != nil && !isRaw {
		return nil, false, nil
	}
	hasResult := len(raw) > 0
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	w.MapLen(6 + mpwrite.Count(r.Type != "", r.Tool != "", hasResult, r.Error != nil, r.OriginalIntentID != "",
		r.OriginalCalledAt != 0, r.CompletedAt != 0, r.PreviousStatus != "", r.Attempt != 0, r.ReplyToError != ""))
	w.Int("v", r.V)
	w.Str("intent_id", r.IntentID)
	w.OptStr("type", r.Type)
	w.Str("tenant", r.Tenant)
	w.Str("key", r.Key)
	w.OptStr("tool", r.Tool)
	w.Str("status", r.Status)
	if hasResult {
		w.Raw("result", raw)
	}
	if r.Error != nil {
		w.Name("error")
		w.MapLen(1 + mpwrite.Count(r.Error.Message != ""))
		w.Str("code", r.Error.Code)
		w.OptStr("message", r.Error.Message)
	}
	w.Bool("was_replay", r.WasReplay)
	w.OptStr("original_intent_id", r.OriginalIntentID)
	w.OptInt64("original_called_at", r.OriginalCalledAt)
	w.OptInt64("completed_at", r.CompletedAt)
	w.OptStr("previous_status", r.PreviousStatus)
	if r.Attempt != 0 {
		w.Int("attempt", r.Attempt)
	}
	w.OptStr("reply_to_error", r.ReplyToError)
	b, err := w.Bytes()
	if err != nil {
		return nil, true, fmt.Errorf("wire: encode result: %w", err)
	}
	return b, true, nil
}
