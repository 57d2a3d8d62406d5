package wire

import "fmt"

// Reject explains why an input cannot be decided. It carries whatever
// could be read of the input so the rejection can still be answered.
type Reject struct {
	Reason string // one of the Reason constants
	Detail string // human-readable, names the field

	// What could be salvaged from the input, possibly empty.
	ID, Tenant, Key, Tool, ReplyTo, Type string
}

func (r *Reject) Error() string {
	return fmt.Sprintf("wire: rejected (%s): %s", r.Reason, r.Detail)
}

// Answerable reports whether the rejection can be answered: an answer is
// matched by intent id, so without one nobody could read it.
func (r *Reject) Answerable() bool { return r.ID != "" }

func reject(reason, format string, a ...any) *Reject {
	return &Reject{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// from copies what could be read of in. An absent tenant is the default
// one, as for an intent that decodes: the answer names the tenant its
// caller sent for, so a client that matches answers by tenant (and key)
// takes it.
func (r *Reject) from(in *Intent) *Reject {
	r.ID, r.Tenant, r.Key, r.Tool, r.ReplyTo, r.Type = in.ID, in.Tenant, in.Key, in.Tool, in.ReplyTo, in.Type
	if r.Tenant == "" {
		r.Tenant = DefaultTenant
	}
	if len(r.ID) > MaxIDBytes {
		r.ID = ""
	}
	if len(r.ReplyTo) > MaxReplyToBytes {
		r.ReplyTo = ""
	}
	return r
}
