package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// LogOptions name the event log an operator command reads.
type LogOptions struct {
	Brokers []string     // required
	Names   topics.Names // default topics.NamesWithPrefix("tool.")
	// Lookup gives each tool's class and pending_ttl (nil: classes are
	// unknown, compensations use the default pending_ttl).
	Lookup     Lookup
	Now        time.Time     // default time.Now()
	SettleWait time.Duration // how long open transactions may take to settle; default 30s
	ClientOpts []kgo.Opt
}

func (o *LogOptions) defaults() {
	if o.Names.Events == "" {
		o.Names = topics.NamesWithPrefix(topics.DefaultPrefix)
	}
	if o.Lookup == nil {
		o.Lookup = func(string) (tools.Spec, bool) { return tools.Spec{}, false }
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.SettleWait <= 0 {
		o.SettleWait = 30 * time.Second
	}
}

// PendingFromLog lists every key in doubt by reading the whole event log
// (every partition, read-committed, up to its stable end) and folding it
// with saga.Apply, as the executor's restore does. It needs no running
// reconciler. Rows within their pending_ttl are included (state
// within_ttl); the state of the others is what the reconciler's policy
// does with them (Merge adds what a running reconciler knows). Memory is
// proportional to the number of keys in the log.
func PendingFromLog(ctx context.Context, o LogOptions) ([]Row, error) {
	o.defaults()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.Brokers...)}, o.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("reconciler: client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	n, err := partitionCount(ctx, adm, o.Names.Events)
	if err != nil {
		return nil, err
	}
	recs := map[string]*saga.Record{}
	for p := range n {
		part, err := foldPartition(ctx, adm, o, p)
		if err != nil {
			return nil, err
		}
		maps.Copy(recs, part)
	}
	now := o.Now.UnixMilli()
	var rows []Row
	for _, rec := range recs {
		if subj, ok := SubjectOf(rec, o.Lookup); ok {
			rows = append(rows, rowOf(now, subj, nil))
		}
	}
	sortRows(rows)
	return rows, nil
}

func partitionCount(ctx context.Context, adm *kadm.Client, topic string) (int32, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reconciler: list topics: %w", err)
	}
	if d, ok := td[topic]; !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, fmt.Errorf("%w: %s", ErrTopics, topic)
	}
	return int32(len(td[topic].Partitions)), nil
}

// foldPartition folds events partition p from its log start into the
// records of its keys; a start that moves during the read begins the fold
// again (eventlog.ReadFromStart).
func foldPartition(ctx context.Context, adm *kadm.Client, o LogOptions, p int32) (map[string]*saga.Record, error) {
	end, err := eventlog.Target(ctx, adm, o.Names.Events, p, o.SettleWait)
	if err != nil {
		return nil, err
	}
	var recs map[string]*saga.Record
	err = eventlog.ReadFromStart(ctx, o.Brokers, adm, o.Names.Events, p, end, func() { recs = map[string]*saga.Record{} }, func(off int64, r *kgo.Record) error {
		ev, err := eventlog.Decode(r.Value)
		if err != nil {
			return fmt.Errorf("%s/%d offset %d: %w", o.Names.Events, p, off, err)
		}
		if ev.Kind == saga.EvRound {
			return nil // about the partition, not a key
		}
		rk := wire.RoutingKey(ev.Tenant, ev.Key)
		rec := saga.Apply(recs[rk], *ev)
		if rec == nil {
			delete(recs, rk)
			return nil
		}
		recs[rk] = slim(rec)
		return nil
	}, o.ClientOpts...)
	return recs, err
}

// slim drops what a settled record no longer needs for the fold of later
// events (a compensation, an expiry), to bound the memory of a long log.
func slim(rec *saga.Record) *saga.Record {
	if rec.Status.Settled() {
		rec.Args, rec.Result, rec.Waiters, rec.ArgsHash = nil, nil, nil, nil
	}
	return rec
}

// FetchRows asks a running reconciler (its --http-addr) for the rows of its
// last scan, with an operator's token: /pending is served behind the
// console's sign-in.
func FetchRows(ctx context.Context, httpAddr, token string) ([]Row, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/pending", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reconciler at %s: %w", httpAddr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reconciler at %s: %s", httpAddr, resp.Status)
	}
	var body struct {
		Rows []Row `json:"rows"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("reconciler at %s: %w", httpAddr, err)
	}
	return body.Rows, nil
}

// ResolveRequest is an operator's word on a key: a resolve of a key in
// doubt, a compensate, or an approve or deny of a key awaiting approval,
// as Type says.
type ResolveRequest struct {
	Brokers []string     // required
	Names   topics.Names // default topics.NamesWithPrefix("tool.")
	// Type is wire.TypeResolve (the default), wire.TypeCompensate (undo
	// the key's effect with its tool's compensate_with; Outcome, Result
	// and Err stay empty), or wire.TypeApprove or wire.TypeDeny (decide
	// the key's request for approval; Reason is required, CallID and
	// ArgsDigest bind the decision to the request and arguments the
	// operator saw).
	Type   string
	Tenant string // default "default"
	Key    string // required
	// CallID, when set, makes the command apply only while this call (or
	// compensation) is the key's current one in doubt: an operator acting
	// on a page that went stale is refused rather than settling a newer
	// call. Empty: unconditional.
	CallID string
	// Outcome: succeeded, failed or not_executed for a call in doubt;
	// compensated, compensation_failed or not_executed for a compensation.
	Outcome string
	Result  any             // optional, answered as the call's result
	Err     *wire.ErrorInfo // optional, answered as the call's error
	By      string          // who settles it (recorded in the event log); required
	Reason  string
	// ArgsDigest (approve, deny): the hex SHA-256 of the arguments
	// decided on; the executor refuses the command for any other.
	ArgsDigest string
	// Force settles a call (or compensation) that may still reach its tool
	// because its pending_ttl has not passed yet; without it the executor
	// refuses such a resolve (StillLanding). Recorded in the event log
	// (forced). Only for an operator who knows the call cannot land any
	// more: settling it not_executed frees the key for a new call.
	Force bool
	// ID is the command's intent id; default a fresh one.
	ID         string
	ClientOpts []kgo.Opt
}

// ErrRejected is returned by Resolve when the executor refused the command
// (the key is not in doubt, a call for it is running, the outcome does not
// fit); the returned result says why.
var ErrRejected = errors.New("reconciler: resolve rejected")

// Resolve sends a resolve (or compensate, approve, deny) command on the
// control topic and waits for the executor's answer to it: "resolved" (the
// key is settled and every waiting intent got its final answer), a
// compensate's answer once its compensation ended, "approved" (the call
// started; its outcome comes to the intents that wait for it) or "denied",
// or "rejected" (ErrRejected). It blocks until the answer or ctx's end.
func Resolve(ctx context.Context, req ResolveRequest) (*wire.Result, error) {
	in, err := req.intent()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(req.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, req.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("reconciler: client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	answers, err := listenForAnswer(ctx, adm, req, in.RoutingKey())
	if err != nil {
		return nil, err
	}
	defer answers.Close()
	nControl, err := partitionCount(ctx, adm, req.Names.Control)
	if err != nil {
		return nil, err
	}
	if err := produceCommand(ctx, cl, req.Names, nControl, in); err != nil {
		return nil, err
	}
	return awaitAnswer(ctx, answers, in.ID)
}

func (req *ResolveRequest) intent() (*wire.Intent, error) {
	if req.Names.Control == "" {
		req.Names = topics.NamesWithPrefix(topics.DefaultPrefix)
	}
	if req.Tenant == "" {
		req.Tenant = wire.DefaultTenant
	}
	if req.ID == "" {
		req.ID = "op-" + client.NewID()
	}
	if req.Type == "" {
		req.Type = wire.TypeResolve
	}
	in := &wire.Intent{V: wire.Version, Type: req.Type, ID: req.ID, Tenant: req.Tenant, Key: req.Key, CallID: req.CallID,
		Outcome: req.Outcome, Result: req.Result, Error: req.Err, By: req.By, Reason: req.Reason, Force: req.Force, ArgsDigest: req.ArgsDigest}
	b, err := wire.EncodeIntent(in)
	if err != nil {
		return nil, err
	}
	// The executor's own validation, here, so a typo fails before anything
	// is sent.
	if _, rej := wire.DecodeIntent(b, []byte(in.RoutingKey()), wire.FromControl); rej != nil {
		return nil, fmt.Errorf("reconciler: %s: %s: %s", req.Type, rej.Reason, rej.Detail)
	}
	if req.By == "" {
		return nil, fmt.Errorf("reconciler: %s: who settles the key (by) is required", req.Type)
	}
	return in, nil
}

// listenForAnswer consumes the results partition the answer to rk lands on,
// from its current end, so the answer to a command sent afterwards is seen.
func listenForAnswer(ctx context.Context, adm *kadm.Client, req ResolveRequest, rk string) (*kgo.Client, error) {
	n, err := partitionCount(ctx, adm, req.Names.Results)
	if err != nil {
		return nil, err
	}
	p := wire.Partition(rk, n)
	ends, err := adm.ListEndOffsets(ctx, req.Names.Results)
	if err != nil {
		return nil, fmt.Errorf("reconciler: end offsets of %s: %w", req.Names.Results, err)
	}
	end, ok := ends.Lookup(req.Names.Results, p)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("reconciler: no end offset for %s/%d", req.Names.Results, p)
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(req.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{req.Names.Results: {p: kgo.NewOffset().At(end.Offset)}})}, req.ClientOpts...)...)
}

// StillLanding reports whether res is the executor's refusal of a
// command that came before the call's pending_ttl passed: the call may
// still reach its tool, and only a forced command settles it then.
func StillLanding(res *wire.Result) bool {
	return errors.Is(res.Refusal(), wire.ErrMayStillLand)
}

func awaitAnswer(ctx context.Context, cl *kgo.Client, id string) (*wire.Result, error) {
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reconciler: no answer to resolve %s: %w", id, err)
		}
		var got *wire.Result
		fs.EachRecord(func(r *kgo.Record) {
			if res, err := wire.DecodeResult(r.Value); err == nil && res.IntentID == id && got == nil {
				got = res
			}
		})
		switch {
		case got == nil:
		case got.Status == codes.StatusRejected:
			return got, ErrRejected
		default:
			return got, nil
		}
	}
}
