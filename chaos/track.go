package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
)

// intentRec is what the harness knows of one produced intent.
type intentRec struct {
	ID, Tenant, Key, Tool, Type string
	Sent                        time.Time
	Produced, ProduceFailed     bool
	Terminal                    []string // statuses of terminal answers, in order
	Pending                     int
}

// Tracker matches produced intents and the answers read from the results
// topic (read-committed). Safe for concurrent use.
type Tracker struct {
	mu struct {
		sync.Mutex
		intents map[string]*intentRec
		keys    map[string][]string // routing key -> intent ids
		answers int
		strays  map[string]int // answers to intent ids we never produced (reconciler commands), by status
	}
}

func newTracker() *Tracker {
	t := &Tracker{}
	t.mu.intents = map[string]*intentRec{}
	t.mu.keys = map[string][]string{}
	t.mu.strays = map[string]int{}
	return t
}

func (t *Tracker) add(in *topics.Intent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.intents[in.ID] = &intentRec{ID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, Type: in.Type, Sent: time.Now()}
	rk := in.RoutingKey()
	t.mu.keys[rk] = append(t.mu.keys[rk], in.ID)
}

func (t *Tracker) produced(id string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.mu.intents[id]; r != nil {
		r.Produced, r.ProduceFailed = err == nil, err != nil
	}
}

func (t *Tracker) answer(res *topics.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.answers++
	r := t.mu.intents[res.IntentID]
	if r == nil {
		t.mu.strays[res.Status]++
		return
	}
	if topics.Terminal(res.Status) {
		r.Terminal = append(r.Terminal, res.Status)
	} else {
		r.Pending++
	}
}

// open returns the produced intents without a terminal answer that were
// sent before cutoff.
func (t *Tracker) open(cutoff time.Time) []intentRec {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []intentRec
	for _, r := range t.mu.intents {
		if r.Produced && len(r.Terminal) == 0 && r.Sent.Before(cutoff) {
			out = append(out, *r)
		}
	}
	return out
}

// snapshot copies every record.
func (t *Tracker) snapshot() (map[string]intentRec, int, map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]intentRec, len(t.mu.intents))
	for id, r := range t.mu.intents {
		out[id] = *r
	}
	strays := map[string]int{}
	for k, v := range t.mu.strays {
		strays[k] = v
	}
	return out, t.mu.answers, strays
}

// readResults follows the results topic from its start, read-committed,
// until ctx ends.
func (t *Tracker) readResults(ctx context.Context, brokers []string, topic string, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)...)
	if err != nil {
		return err
	}
	go func() {
		defer cl.Close()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				if res, err := topics.DecodeResult(r.Value); err == nil {
					t.answer(res)
				}
			})
		}
	}()
	return nil
}
