package mpread

import "github.com/atmostonce/toolexec/saga"

// The saga's shared Waiter and Error, read as mpwrite's saga.go writes
// them, for every decoder whose values hold one (the event envelope, the
// state record). A field they do not know is skipped, as the reflective
// decoder skips it; a field given twice, or a map given as an array, is
// left to the reflective decoder (ok=false).

// Waiter reads a saga.Waiter's map into w (not nil: a Waiter value field
// decodes nil reflectively, a *Waiter field is read by WaiterPtr).
func (r *Reader) Waiter(w *saga.Waiter) bool {
	n, ok := r.MapLen()
	if !ok {
		return false
	}
	var seen uint8
	for range n {
		k, ok := r.Key()
		if !ok {
			return false
		}
		var bit uint8
		switch string(k) {
		case "id":
			bit = 1 << 0
			w.IntentID, ok = r.String()
		case "reply_to":
			bit = 1 << 1
			w.ReplyTo, ok = r.String()
		case "tp":
			bit = 1 << 2
			w.Traceparent, ok = r.String()
		case "type":
			bit = 1 << 3
			w.Type, ok = r.IntentType()
		case "at":
			bit = 1 << 4
			w.At, ok = r.Int64()
		default:
			ok = r.Skip()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return true
}

// WaiterPtr reads a *saga.Waiter: nil as nil, else its map.
func (r *Reader) WaiterPtr() (*saga.Waiter, bool) {
	if r.Nil() {
		return nil, true
	}
	w := &saga.Waiter{}
	if !r.Waiter(w) {
		return nil, false
	}
	return w, true
}

// Error reads a *saga.Error: nil as nil, else its map.
func (r *Reader) Error() (*saga.Error, bool) {
	if r.Nil() {
		return nil, true
	}
	n, ok := r.MapLen()
	if !ok {
		return nil, false
	}
	e := &saga.Error{}
	var seen uint8
	for range n {
		k, ok := r.Key()
		if !ok {
			return nil, false
		}
		var bit uint8
		switch string(k) {
		case "code":
			bit = 1 << 0
			e.Code, ok = r.String()
		case "message":
			bit = 1 << 1
			e.Message, ok = r.String()
		default:
			ok = r.Skip()
		}
		if !ok || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	return e, true
}

// IntentType reads an intent type (a waiter's, an intent's) as String does,
// without allocating for the three known types (saga.InputType's names;
// wire.TypeCall and its siblings are the same strings).
func (r *Reader) IntentType() (string, bool) {
	if r.Nil() {
		return "", true
	}
	p, ok := r.Key()
	if !ok {
		return "", false
	}
	switch string(p) {
	case "call":
		return "call", true
	case "compensate":
		return "compensate", true
	case "resolve":
		return "resolve", true
	}
	return string(p), true
}
