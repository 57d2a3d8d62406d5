package wire

import "github.com/atmostonce/toolexec/codes"

// Admit checks an intent as the executor checks it before deciding: its
// fields (DecodeIntent's checks), its trace headers, the size of its
// record and its arguments' canonical form, with the executor's own
// functions and limits. A producer that relays callers (the gateway) runs
// it before producing, so that a caller is refused at once, with the
// executor's reason, what would otherwise be accepted and rejected later.
// It returns the canonical arguments. What the executor decides from its
// configuration and the key's record (an unknown tool, max_args_bytes, a
// deadline, a conflict) is left to the producer's own checks and to it.
// in's defaults (V, the tenant) are filled as DecodeIntent fills them.
func Admit(in *Intent, src Source, traceparent, tracestate string) ([]byte, *Reject) {
	if in.V == 0 {
		in.V = Version
	}
	if rej := validateIntent(in, src); rej != nil {
		return nil, rej.from(in)
	}
	if rej := CheckHeaders(traceparent, tracestate); rej != nil {
		return nil, rej.from(in)
	}
	_, canon, err := CanonicalArgs(in.Args)
	if err != nil {
		return nil, reject(codes.ReasonInvalidArgs, "%v", err).from(in)
	}
	b, err := EncodeIntent(in)
	if err != nil {
		return nil, reject(codes.ReasonUndecodable, "%v", err).from(in)
	}
	if len(b) > MaxMessageBytes {
		return nil, reject(codes.ReasonOversized, "message is %d bytes, the limit is %d", len(b), MaxMessageBytes).from(in)
	}
	return canon, nil
}
