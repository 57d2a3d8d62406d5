package executor

import (
	"encoding/hex"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Decode: a polled record is decoded, validated, canonicalised and routed
// on its own, so that prepare.go can spread a poll over the cores.

// recordDecoder turns polled records into the core's inputs. Safe for
// concurrent use (spread runs it on every core): it holds only the topic
// names and the routing count, both fixed before Run.
type recordDecoder struct {
	names      topics.Names
	partitions int32 // the routing count (layout.go)
}

// decode turns one polled record into the core's input: the saga's input
// when it is valid, else the reason it is not, and always what could be
// read of it (to answer it on its own if it must be isolated). It runs on
// several goroutines at once: it reads only the record and d.
func (d recordDecoder) decode(r *kgo.Record) partition.Input {
	in := partition.Input{Origin: partition.Origin{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset},
		Traceparent: header(r, "traceparent"), RecordKey: r.Key}
	src := wire.FromIntents
	if r.Topic == d.names.Control {
		src = wire.FromControl
	}
	ti, rej := wire.DecodeIntent(r.Value, r.Key, src)
	if rej != nil {
		in.Reject, in.Salvage = rej, *rej
		return in
	}
	in.Salvage = wire.Reject{ID: ti.ID, Tenant: ti.Tenant, Key: ti.Key, Tool: ti.Tool, ReplyTo: ti.ReplyTo, Type: ti.Type}
	si, rej := d.toInput(ti, r, in.Traceparent)
	if rej != nil {
		in.Reject = rej
		return in
	}
	in.Intent = si
	return in
}

// toInput turns a decoded intent into a saga input: canonical arguments,
// bounded headers, a reply address that is not ours, and the owning
// partition.
//
// A reply_to topic that does not exist is no reason to refuse the intent:
// its answer goes to the results topic with the reason (encode.go).
func (d recordDecoder) toInput(in *wire.Intent, r *kgo.Record, traceparent string) (saga.Input, *wire.Reject) {
	_, canon, err := wire.CanonicalArgs(in.Args)
	if err != nil {
		return saga.Input{}, rejectFrom(in, codes.ReasonInvalidArgs, err.Error())
	}
	if rej := checkRecordHeaders(r); rej != nil {
		return saga.Input{}, rejectFrom(in, rej.Reason, rej.Detail)
	}
	if in.ReplyTo != "" && d.names.Internal(in.ReplyTo) {
		return saga.Input{}, rejectFrom(in, codes.ReasonBadReplyTo, "reply_to names an internal topic of the executor")
	}
	si := saga.Input{
		IntentID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool,
		ArgsHash: wire.ArgsHash(canon), Args: canon, ReplyTo: in.ReplyTo,
		Traceparent: traceparent, DeadlineMs: in.DeadlineMs,
		By: in.By, Reason: in.Reason, CallID: in.CallID, DownstreamKey: in.DownstreamKey, Force: in.Force,
		Partition: r.Partition, Owner: d.partitionOf(in.Tenant, in.Key),
	}
	if in.Scope != nil {
		si.RunID, si.ThreadID = in.Scope.RunID, in.Scope.ThreadID
	}
	return si, fillType(&si, in)
}

// partitionOf is the owner partition of (tenant, key).
func (d recordDecoder) partitionOf(tenant, key string) int32 {
	return wire.Partition(wire.RoutingKey(tenant, key), d.partitions)
}

// checkRecordHeaders bounds the headers the executor copies: the trace
// headers into events and answers, all of them into a forward.
func checkRecordHeaders(r *kgo.Record) *wire.Reject {
	if rej := wire.CheckHeaders(header(r, "traceparent"), header(r, "tracestate")); rej != nil {
		return rej
	}
	n := 0
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	if n > wire.MaxForwardHeaderBytes {
		return &wire.Reject{Reason: codes.ReasonOversized, Detail: fmt.Sprintf("the record's headers are %d bytes, the limit is %d", n, wire.MaxForwardHeaderBytes)}
	}
	return nil
}

func fillType(si *saga.Input, in *wire.Intent) *wire.Reject {
	switch in.Type {
	case wire.TypeCall:
		si.Type = saga.InputCall
	case wire.TypeCompensate:
		si.Type = saga.InputCompensate
	case wire.TypeResolve:
		si.Type = saga.InputResolve
		return fillResolve(si, in)
	case wire.TypeLookup:
		si.Type = saga.InputLookup
	case wire.TypeApprove, wire.TypeDeny:
		return fillDecision(si, in)
	}
	return nil
}

// fillDecision reads an approve or deny: the digest it decides (the
// request's, when it names none), never the hash of its own empty args.
func fillDecision(si *saga.Input, in *wire.Intent) *wire.Reject {
	si.Type = saga.InputApprove
	if in.Type == wire.TypeDeny {
		si.Type = saga.InputDeny
	}
	si.ArgsHash, si.Args = nil, nil
	if in.ArgsDigest != "" {
		d, err := hex.DecodeString(in.ArgsDigest)
		if err != nil {
			return rejectFrom(in, codes.ReasonInvalidField, "field args_digest is not hex")
		}
		si.ArgsHash = d
	}
	return nil
}

func fillResolve(si *saga.Input, in *wire.Intent) *wire.Reject {
	st, _ := saga.ParseStatus(in.Outcome)
	si.Outcome = st
	if in.Result != nil {
		b, err := msgpack.Marshal(in.Result)
		if err != nil || len(b) > wire.MaxResultBytes {
			return rejectFrom(in, codes.ReasonInvalidField, fmt.Sprintf("field result cannot be stored: not encodable, or over %d bytes", wire.MaxResultBytes))
		}
		si.Result = b
	}
	if in.Error != nil {
		si.Err = &saga.Error{Code: in.Error.Code, Message: in.Error.Message}
	}
	return nil
}

func rejectFrom(in *wire.Intent, reason, detail string) *wire.Reject {
	return &wire.Reject{Reason: reason, Detail: detail, ID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, ReplyTo: in.ReplyTo, Type: in.Type}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
