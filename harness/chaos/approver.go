package chaos

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Approver is the person behind ToolApproval: for every key of that tool
// the load makes, after a random pause it approves (sometimes delivering
// the same approve twice), denies, or does nothing and lets the request
// lapse at its approval_ttl; now and then it first sends an approve of
// other arguments (a forged digest), which the executor must refuse. Its
// commands go to the control topic, as `reconciler approve` sends them,
// bound to the digest of the arguments the agent sent, never to a call
// id (the request may be any of the key's intents that arrived first).
//
// The checker does not trust it: it verifies in the event log that no
// call of ToolApproval started without an approved event of its request
// and digest in the same transaction, and at the ledger that no effect
// came under any other downstream key.
type Approver struct {
	rng        *rand.Rand
	prod       *kgo.Client
	names      topics.Names
	partitions int32
	in         chan *agentKey // bounded; a full queue leaves the key to lapse

	mu     sync.Mutex
	counts map[string]int
}

// approverQueue bounds the keys waiting for the approver's decision.
const approverQueue = 4096

// approverPause bounds how long the approver takes over a key: well
// within ToolApproval's approval_ttl (approvalTTL), so that the keys it
// means to decide are decided and the others lapse.
const approverPause = 4 * time.Second

func newApprover(seed uint64, prod *kgo.Client, names topics.Names, partitions int32) *Approver {
	return &Approver{rng: rand.New(rand.NewPCG(seed, 0xa99)), prod: prod, names: names, partitions: partitions,
		in: make(chan *agentKey, approverQueue), counts: map[string]int{}}
}

// Close ends the offers: the load has stopped. Offer must not be called
// after it.
func (a *Approver) Close() { close(a.in) }

// offer hands the approver a new key of ToolApproval; never blocks.
func (a *Approver) offer(k *agentKey) {
	select {
	case a.in <- k:
	default:
		a.count("queue_full")
	}
}

// Run decides every key offered until Close (once the load stopped) or
// ctx's end, and returns when every decision it scheduled was sent.
func (a *Approver) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case k, ok := <-a.in:
			if !ok {
				return
			}
			pause := time.Duration(200+a.rng.IntN(int(approverPause/time.Millisecond))) * time.Millisecond
			choice, twice, forge := a.rng.IntN(100), a.rng.IntN(4) == 0, a.rng.IntN(10) == 0
			wg.Add(1)
			time.AfterFunc(pause, func() { defer wg.Done(); a.decide(k, choice, twice, forge) })
		}
	}
}

// decide carries out one decision: 60 approve, 20 deny, 20 nothing.
func (a *Approver) decide(k *agentKey, choice int, twice, forge bool) {
	if forge {
		a.send(k, wire.TypeApprove, "forged", digestOf(map[string]any{"amount": -1, "forged": true}))
	}
	switch {
	case choice < 60:
		id := a.send(k, wire.TypeApprove, "", digestOf(k.args))
		if twice {
			a.resend(k, wire.TypeApprove, id)
		}
	case choice < 80:
		a.send(k, wire.TypeDeny, "", digestOf(k.args))
	default:
		a.count("left_to_lapse")
	}
}

// send produces one command and returns its id.
func (a *Approver) send(k *agentKey, typ, why, digest string) string {
	id := "ap-" + client.NewID()
	a.produce(k, typ, id, digest, why)
	return id
}

// resend delivers the same command again (the same id): one effect.
func (a *Approver) resend(k *agentKey, typ, id string) {
	a.produce(k, typ, id, digestOf(k.args), "twice")
}

func (a *Approver) produce(k *agentKey, typ, id, digest, why string) {
	if why == "" {
		why = typ
	}
	in := &wire.Intent{V: wire.Version, Type: typ, ID: id, Tenant: k.tenant, Key: k.key, By: "chaos-approver",
		Reason: "chaos: " + why, ArgsDigest: digest}
	b, err := wire.EncodeIntent(in)
	if err != nil {
		panic("chaos: encode approval: " + err.Error())
	}
	rk := in.RoutingKey()
	r := &kgo.Record{Topic: a.names.Control, Partition: wire.Partition(rk, a.partitions), Key: []byte(rk), Value: b}
	// As long as the load's produces may wait (a broker bounce lasts up to
	// a minute): a command lost to the timeout only leaves its key to lapse.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := a.prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		a.count("produce_failed")
		return
	}
	a.count(why)
}

func (a *Approver) count(what string) {
	a.mu.Lock()
	a.counts[what]++
	a.mu.Unlock()
}

// Counts copies what the approver did.
func (a *Approver) Counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.counts))
	for k, v := range a.counts {
		out[k] = v
	}
	return out
}

// digestOf is the args_digest of arguments: what the executor records.
func digestOf(args map[string]any) string {
	_, canon, err := wire.CanonicalArgs(args)
	if err != nil {
		panic("chaos: canonical args: " + err.Error())
	}
	return hex.EncodeToString(wire.ArgsHash(canon))
}
