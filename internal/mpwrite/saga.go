package mpwrite

import "github.com/atmostonce/toolexec/saga"

// Waiter writes a saga.Waiter: "id" always, the rest when not empty.
func (w *Writer) Waiter(wt *saga.Waiter) {
	w.MapLen(1 + Count(wt.ReplyTo != "", wt.Traceparent != "", wt.Type != "", wt.At != 0))
	w.Str("id", wt.IntentID)
	w.OptStr("reply_to", wt.ReplyTo)
	w.OptStr("tp", wt.Traceparent)
	w.OptStr("type", wt.Type)
	w.OptInt64("at", wt.At)
}

// Error writes a saga.Error: "code" always, "message" when not empty.
func (w *Writer) Error(e *saga.Error) {
	w.MapLen(1 + Count(e.Message != ""))
	w.Str("code", e.Code)
	w.OptStr("message", e.Message)
}
