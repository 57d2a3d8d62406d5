package sim

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
)

// injector draws the run's faults from the seed and injects them until
// the load stops. Each step draws the same number of values whatever the
// world's state (a fault that does not apply now, such as a crash with
// one member left, is skipped after its draws), so a seed gives the same
// schedule of attempts on every replay; what each attempt meets depends
// on the clock and the goroutines.
type injector struct {
	w     *world
	rng   *rand.Rand
	kinds []kmsg.Key // the request kinds this run's network faults aim at

	mu     sync.Mutex
	counts map[string]int // by fault kind, and kind:detail
	last   map[string]time.Time
	wg     sync.WaitGroup // faults still running in the background
}

// cooldown spaces the faults that take the world seconds to absorb.
var cooldown = map[string]time.Duration{
	FaultJoin: 1500 * time.Millisecond, FaultLeave: 1500 * time.Millisecond, FaultCrash: 1500 * time.Millisecond,
	FaultWipe: 3 * time.Second, FaultPebble: 2 * time.Second, FaultCoordinator: 2 * time.Second, FaultLeaders: 2 * time.Second,
	FaultReconciler: 5 * time.Second, FaultLogStart: 500 * time.Millisecond, FaultLogStartPast: 2 * time.Second,
}

// maxMembers bounds the group's size.
const maxMembers = 5

func newInjector(w *world) *injector {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, 3))
	in := &injector{w: w, rng: rng, counts: map[string]int{}, last: map[string]time.Time{}}
	all := requestKinds()
	in.kinds = all
	if rng.IntN(2) == 0 { // swarm: some runs aim at a few request kinds only
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		in.kinds = append([]kmsg.Key(nil), all[:3+rng.IntN(6)]...)
	}
	return in
}

func (in *injector) note(kind, detail string) {
	in.w.logf("fault %s %s", kind, detail)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.counts[kind]++
	if detail != "" {
		in.counts[kind+":"+detail]++
	}
}

func (in *injector) snapshot() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.counts)
}

// total is the number of faults injected (details not counted twice).
func (in *injector) total() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, k := range FaultKinds {
		n += in.counts[k]
	}
	return n
}

// run injects until ctx ends, then waits for the faults in the background.
func (in *injector) run(ctx context.Context) {
	for {
		gap := time.Duration(in.rng.ExpFloat64() * float64(in.w.cfg.FaultGap))
		select {
		case <-ctx.Done():
			in.w.net.dropTriggers()
			in.wg.Wait()
			return
		case <-time.After(gap):
		}
		in.step(ctx)
	}
}

// draws are one step's random values, drawn whether or not they are used.
type draws struct {
	kind          string
	a, b, c, d, e int
	f             float64
	// at is the request a fault anchored to the protocol fired on; nil
	// for a fault of the clock.
	at *kfakeresp.Request
}

func (in *injector) draw() draws {
	p := in.w.p
	total := 0
	for _, f := range p.Faults {
		total += p.Weights[f]
	}
	r := in.rng.IntN(max(total, 1))
	var kind string
	for _, f := range p.Faults {
		if r < p.Weights[f] {
			kind = f
			break
		}
		r -= p.Weights[f]
	}
	return draws{kind: kind, a: in.rng.IntN(1 << 20), b: in.rng.IntN(1 << 20), c: in.rng.IntN(1 << 20), d: in.rng.IntN(1 << 20),
		e: in.rng.IntN(1 << 20), f: in.rng.Float64()}
}

func (in *injector) step(ctx context.Context) {
	d := in.draw()
	if d.kind == "" || time.Since(in.last[d.kind]) < cooldown[d.kind] {
		return
	}
	if anchorable[d.kind] && d.f < anchoredShare {
		in.anchor(ctx, d)
		in.last[d.kind] = time.Now()
		return
	}
	if in.inject(ctx, d) {
		in.last[d.kind] = time.Now()
	}
}

// Faults anchored to the protocol. A third of the faults that are not
// themselves about requests wait for the next request of a kind (drawn
// from the run's request kinds) from any product client, and then happen
// at once, while that request is held before the broker reads it (at
// most 2 s): a member crashes as some member sends its EndTxn, a member
// joins as one heartbeats, the log start moves between a reader's
// listing of offsets and its fetch. The
// clock alone rarely lands a fault inside the few milliseconds between
// two requests of one protocol step; these land in such gaps by
// construction. A log move anchored to a request that names events
// partitions moves one of them (the one that request is about).
var anchorable = map[string]bool{FaultJoin: true, FaultLeave: true, FaultCrash: true, FaultWipe: true, FaultLogStart: true,
	FaultLogStartPast: true, FaultPebble: true, FaultCoordinator: true, FaultLeaders: true, FaultReconciler: true}

const anchoredShare = 1.0 / 3

// anchor arms d to fire on the next request of a kind.
func (in *injector) anchor(ctx context.Context, d draws) {
	key := in.kinds[d.e%len(in.kinds)]
	var match func(kfakeresp.Request) bool
	if d.kind == FaultLogStart || d.kind == FaultLogStartPast {
		// A log move waits for a read of the log it moves: a fetch or a
		// listing of offsets that names an events partition (the one
		// moved past its rounds, once the run has one).
		key = []kmsg.Key{kmsg.Fetch, kmsg.ListOffsets}[d.e%2]
		match = func(r kfakeresp.Request) bool { return in.w.readsLog(r, d.kind == FaultLogStartPast) }
	}
	in.wg.Add(1)
	in.w.logf("anchored: %s at the next %s request", d.kind, key.Name())
	in.w.net.onNext(&trigger{key: key, match: match, drop: in.wg.Done, fire: func(r kfakeresp.Request) {
		defer in.wg.Done()
		if ctx.Err() != nil {
			return
		}
		d.at = &r
		in.w.logf("anchored %s fires on a %s request of %s", d.kind, key.Name(), r.ClientID)
		in.inject(ctx, d)
	}})
}

// inject carries one fault out; false when it does not apply now.
func (in *injector) inject(ctx context.Context, d draws) bool {
	w := in.w
	switch d.kind {
	case FaultRefused, FaultErrored, FaultLost:
		in.network(d)
	case FaultDelay:
		key := in.kinds[d.a%len(in.kinds)]
		w.net.delay(key, time.Duration(50+d.b%1450)*time.Millisecond, 1+d.c%5)
		in.note(d.kind, key.Name())
	case FaultJoin:
		return in.join(ctx, d)
	case FaultLeave, FaultCrash, FaultWipe:
		return in.stop(d)
	case FaultLogStart, FaultLogStartPast:
		p := int32(d.a % int(w.p.Partitions))
		if ps := w.eventsPartitions(d.at); len(ps) > 0 {
			p = ps[d.b%len(ps)]
		}
		what := w.mover.move(ctx, rand.New(rand.NewPCG(uint64(d.b), uint64(d.c))), p, d.kind == FaultLogStartPast)
		in.note(d.kind, what)
	case FaultPebble:
		return in.pebble(d)
	case FaultCoordinator:
		w.cluster.RehashCoordinators()
		in.note(d.kind, "")
	case FaultLeaders:
		w.cluster.ShufflePartitionLeaders()
		in.note(d.kind, "")
	case FaultHostile:
		// A wave outlives the load (it waits for its answers and its
		// reply_to topic's follower reads on through the settle): it
		// runs under the run's context, not the load's.
		if w.hostile == nil || !w.hostile.Start(w.runCtx) {
			return false
		}
		in.note(d.kind, "")
	case FaultReconciler:
		in.wg.Add(1)
		go func() { defer in.wg.Done(); w.rec.restart(ctx) }()
		in.note(d.kind, "")
	}
	return true
}

// network arms a refused, errored or lost answer of the next 1 to 3
// requests of one kind, with one of its codes (a lost answer has none).
func (in *injector) network(d draws) {
	key := in.kinds[d.a%len(in.kinds)]
	codes := codesFor(key, in.w.cfg.Codes)
	if len(codes) == 0 && d.kind != FaultLost {
		return // no code to give it (client telemetry with --codes documented)
	}
	var code *kerr.Error
	if len(codes) > 0 {
		code = codes[d.b%len(codes)].err
	}
	count, topLevel := 1+d.c%3, d.d%2 == 0
	kind := truthfulWay(d.kind, key, code)
	switch kind {
	case FaultRefused:
		in.w.net.refuse(key, code, topLevel, count)
	case FaultErrored:
		in.w.net.answer(key, code, kfakeresp.Errored, topLevel, count)
	case FaultLost:
		in.w.net.answer(key, nil, kfakeresp.Lost, false, count)
	}
	in.w.logf("armed: %s of the next %d %s requests (code %v, top level %v)", kind, count, key.Name(), code, topLevel)
	in.note(kind, key.Name())
}

// truthfulWay is the way a fault of kind can answer a request of key with
// code without the broker lying about whether it applied the request: a
// code whose meaning contradicts the way is injected the other way.
//
// Why: a producer numbers its batches and trusts the answer. franz-go
// (v1.22.3, sink.go) takes DUPLICATE_SEQUENCE_NUMBER as "already written"
// and reports the batch produced; and it takes any other definite error on
// a Produce as "not written", reusing the batch's sequence number for the
// next batch (the Java client does the same). Kafka validates a batch
// before it appends it, so it answers such codes only for batches it did
// not write; the answers it gives after an append are
// NOT_ENOUGH_REPLICAS_AFTER_APPEND and REQUEST_TIMED_OUT, which franz-go
// marks unsure and resends under the same number. A refused batch
// answered DUPLICATE_SEQUENCE_NUMBER is lost behind the producer's back
// (an agent's intents reported produced, at offset 0, that no log holds).
// An applied one answered CLUSTER_AUTHORIZATION_FAILED makes the redone
// tick's batch, with the same number, a duplicate the broker acknowledges
// at the aborted batch's offset without writing it (a replay's answer
// committed that is not in the log, and the intent it answers lost).
func truthfulWay(kind string, key kmsg.Key, code *kerr.Error) string {
	if key != kmsg.Produce || code == nil {
		return kind
	}
	switch {
	case code.Code == kerr.DuplicateSequenceNumber.Code:
		return FaultErrored
	case kind == FaultErrored && !slices.Contains(afterAppend, code.Code):
		return FaultRefused
	}
	return kind
}

// afterAppend are the codes Kafka answers a Produce with after it appended
// the batch (ReplicaManager's delayed produce).
var afterAppend = []int16{kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code}

func (in *injector) join(ctx context.Context, d draws) bool {
	w := in.w
	if w.fleet.count() >= maxMembers {
		return false
	}
	dir := ""
	if d.a%3 > 0 { // most joins are restarts on a stopped member's data dir
		dir = w.fleet.stoppedDir(func(n int) int { return d.b % n })
	}
	in.note(FaultJoin, map[bool]string{true: "new", false: "restart"}[dir == ""])
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		if err := w.fleet.start(ctx, dir); err != nil {
			w.logf("join failed: %v", err)
		}
	}()
	return true
}

// stop takes a member away (gracefully, crashed, or crashed with its
// disk), never the last one: the heal would bring it back, and a run with
// no member decides nothing meanwhile. An anchored stop takes the member
// whose request fired it, when a member sent it.
func (in *injector) stop(d draws) bool {
	w := in.w
	if w.fleet.count() <= 1 {
		return false
	}
	var m *member
	if d.at != nil { // anchored: the member that sent the request, if it is one
		m = w.fleet.takeNamed(d.at.ClientID)
	}
	if m == nil {
		m = w.fleet.take(func(n int) int { return d.a % n })
	}
	if m == nil {
		return false
	}
	in.note(d.kind, "")
	if d.kind == FaultLeave {
		w.fleet.leave(m)
		return true
	}
	w.logf("crashing %s (wipe %v)", m.name, d.kind == FaultWipe)
	in.wg.Add(1)
	go func() { defer in.wg.Done(); w.fleet.crash(m, d.kind == FaultWipe) }()
	return true
}

// pebble makes one member's Pebble log fail its syncs for 200 ms to 2 s
// (members.go, disk, says why syncs only).
func (in *injector) pebble(d draws) bool {
	ms := in.w.fleet.members()
	if len(ms) == 0 {
		return false
	}
	m := ms[d.a%len(ms)]
	m.disk.failSyncs.Store(true)
	time.AfterFunc(time.Duration(200+d.c%1800)*time.Millisecond, func() { m.disk.failSyncs.Store(false) })
	in.note(FaultPebble, "wal_sync")
	return true
}
