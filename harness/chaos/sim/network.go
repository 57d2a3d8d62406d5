package sim

import (
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
)

// The network faults: every request kind, every code, three ways.
//
//   - refused: kfake's Fault API answers the next n requests of a kind
//     with the code before the broker acts on them (kfake applies
//     REQUEST_TIMED_OUT, and NOT_ENOUGH_REPLICAS_AFTER_APPEND on a
//     produce, as a real broker does: answered after the work).
//   - errored and lost: a kfakeresp.Interposer on every listener lets the
//     broker act and then answers with the code, or cuts the connection.
//   - delay: the Interposer holds the next n requests of a kind.
//
// Each fault is armed for the next n requests of its kind from any
// product client (the executors' sessions, restores and admin requests,
// the reconciler, package client's agents); the harness's own clients
// (client id harnessID) pass untouched, so that what it reads to judge
// the run is the truth. kfake's refusals cannot tell clients apart and
// hit the harness too; its readers survive them (they retry, and dedup
// what a reset reads again).
type network struct {
	cluster *kfake.Cluster
	ip      *kfakeresp.Interposer

	mu      sync.Mutex
	arms    []*arm
	handles []refusal
	hits    map[string]int // "Kind/CODE/way" -> requests it was injected on
	seen    map[string]int // request kind -> requests from product clients
	log     func(string, ...any)
	// triggers run a fault when the next request of their kind from a
	// product client reaches the broker.
	triggers []*trigger
}

// trigger anchors a fault to a moment of the protocol instead of the
// clock: it fires, on its own goroutine, with the request that reached
// the broker; drop is called instead when it never fires.
type trigger struct {
	key   kmsg.Key
	match func(kfakeresp.Request) bool // nil: any request of the kind
	fire  func(kfakeresp.Request)
	drop  func()
}

// onNext arms a trigger.
func (n *network) onNext(t *trigger) {
	n.mu.Lock()
	n.triggers = append(n.triggers, t)
	n.mu.Unlock()
}

// fireTrigger runs the first trigger armed for key, if any, before the
// broker reads the request: the fault happens between the client's send
// and the broker's read, never after the answer. The request waits for
// the fault at most holdForTrigger (a fault that needs this very
// connection, a crash of the member that sent it, must not wedge it).
func (n *network) fireTrigger(key kmsg.Key, r kfakeresp.Request) {
	n.mu.Lock()
	var t *trigger
	for i, c := range n.triggers {
		if c.key == key && (c.match == nil || c.match(r)) {
			t = c
			n.triggers = append(n.triggers[:i], n.triggers[i+1:]...)
			break
		}
	}
	n.mu.Unlock()
	if t == nil {
		return
	}
	done := make(chan struct{})
	go func() { defer close(done); t.fire(r) }()
	select {
	case <-done:
	case <-time.After(holdForTrigger):
	}
}

// holdForTrigger bounds how long a request waits for the fault it fired.
const holdForTrigger = 2 * time.Second

// dropTriggers disarms every trigger that has not fired.
func (n *network) dropTriggers() {
	n.mu.Lock()
	ts := n.triggers
	n.triggers = nil
	n.mu.Unlock()
	for _, t := range ts {
		t.drop()
	}
}

// harnessID starts the client id of every harness client.
const harnessID = "sim-harness"

// arm is an errored, lost or delay fault waiting for its requests.
type arm struct {
	key   kmsg.Key
	v     kfakeresp.Verdict
	left  int
	label string
}

type refusal struct {
	h     *kfake.FaultHandle
	label string
}

func newNetwork() *network {
	return &network{ip: kfakeresp.NewInterposer(), hits: map[string]int{}, seen: map[string]int{}}
}

// start installs the decider once the cluster exists.
func (n *network) start(c *kfake.Cluster) {
	n.cluster = c
	n.ip.Set(n.decide)
}

func (n *network) decide(r kfakeresp.Request) kfakeresp.Verdict {
	if strings.HasPrefix(r.ClientID, harnessID) {
		return kfakeresp.Verdict{}
	}
	key := kmsg.Key(r.Req.Key())
	n.fireTrigger(key, r)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen[key.Name()]++
	for i, a := range n.arms {
		if a.key != key {
			continue
		}
		if a.left--; a.left <= 0 {
			n.arms = append(n.arms[:i], n.arms[i+1:]...)
		}
		n.hits[a.label]++
		if n.log != nil {
			n.log("injected %s on a request of %s", a.label, r.ClientID)
		}
		return a.v
	}
	return kfakeresp.Verdict{}
}

// label names a fault in the coverage: kind, code, way.
func label(key kmsg.Key, code *kerr.Error, way string) string {
	if code == nil {
		return key.Name() + "/-/" + way
	}
	return key.Name() + "/" + code.Message + "/" + way
}

// refuse arms a kfake refusal of the next count requests of key.
func (n *network) refuse(key kmsg.Key, code *kerr.Error, topLevel bool, count int) {
	h := n.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{key}, Err: code, TopLevel: topLevel, Count: count})
	n.mu.Lock()
	n.handles = append(n.handles, refusal{h: h, label: label(key, code, FaultRefused)})
	n.mu.Unlock()
}

// answer arms an errored or lost answer of the next count requests of key.
func (n *network) answer(key kmsg.Key, code *kerr.Error, way kfakeresp.Way, topLevel bool, count int) {
	v := kfakeresp.Verdict{Way: way, TopLevel: topLevel}
	name := FaultLost
	if way == kfakeresp.Errored {
		v.Code, name = code.Code, FaultErrored
	} else {
		code = nil
	}
	n.add(&arm{key: key, v: v, left: count, label: label(key, code, name)})
}

// delay arms a hold of the next count requests of key.
func (n *network) delay(key kmsg.Key, d time.Duration, count int) {
	n.add(&arm{key: key, v: kfakeresp.Verdict{Delay: d}, left: count, label: label(key, nil, FaultDelay)})
}

func (n *network) add(a *arm) {
	n.mu.Lock()
	n.arms = append(n.arms, a)
	n.mu.Unlock()
}

// heal removes every armed fault and counts the refusals' hits.
func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.arms = nil
	for _, r := range n.handles {
		r.h.Remove()
		if h := r.h.Hits(); h > 0 {
			n.hits[r.label] += h
		}
	}
	n.handles = nil
}

// counts returns the faults injected (by label) and the requests seen
// from product clients (by kind).
func (n *network) counts() (hits, seen map[string]int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.hits), maps.Clone(n.seen)
}
