package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// intentRec is what the harness knows of one produced intent.
type intentRec struct {
	ID, Tenant, Key, Tool, Type string
	Hostile                     string // the poison kind, "" for the load's intents
	Sent                        time.Time
	Produced, ProduceFailed     bool
	Terminal                    []string    // statuses of terminal answers, in order
	Answers                     []answerRec // the terminal answers, in order
	Pending                     int
}

// answerRec is one terminal answer as the checks need it.
type answerRec struct {
	Status, Code string
	Topic        string // where it was read
	ReplyToError string // why it is on the results topic and not on reply_to
}

// intentKey identifies an intent: ids are unique per emission of one
// agent, not across tenants (two tenants may send the same id).
func intentKey(tenant, id string) string { return tenant + "\x00" + id }

// Tracker matches produced intents and the answers read from the results
// topic (read-committed), and from reply_to topics the hostile waves
// create. Safe for concurrent use.
type Tracker struct {
	results string // the results topic
	mu      struct {
		sync.Mutex
		intents map[string]*intentRec // by intentKey
		byID    map[string][]string   // intent id -> intentKeys
		keys    map[string][]string   // routing key -> intent ids
		answers int
		strays  map[string]int // answers to intent ids we never produced (reconciler commands), by status
		// strayWhy keeps the first reasons of stray answers that are not
		// plain successes, "status code: message" (bounded).
		strayWhy map[string]int
	}
}

func newTracker(results string) *Tracker {
	t := &Tracker{results: results}
	t.mu.intents = map[string]*intentRec{}
	t.mu.byID = map[string][]string{}
	t.mu.keys = map[string][]string{}
	t.mu.strays = map[string]int{}
	t.mu.strayWhy = map[string]int{}
	return t
}

func (t *Tracker) add(in *wire.Intent) { t.addHostile(in, "") }

// addHostile tracks an intent of a hostile wave; kind names its poison.
func (t *Tracker) addHostile(in *wire.Intent, kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tenant := in.Tenant
	if tenant == "" {
		tenant = wire.DefaultTenant
	}
	k := intentKey(tenant, in.ID)
	t.mu.intents[k] = &intentRec{ID: in.ID, Tenant: tenant, Key: in.Key, Tool: in.Tool, Type: in.Type, Hostile: kind, Sent: time.Now()}
	t.mu.byID[in.ID] = append(t.mu.byID[in.ID], k)
	rk := wire.RoutingKey(tenant, in.Key)
	t.mu.keys[rk] = append(t.mu.keys[rk], in.ID)
}

func (t *Tracker) produced(tenant, id string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.mu.intents[intentKey(tenant, id)]; r != nil {
		r.Produced, r.ProduceFailed = err == nil, err != nil
	}
}

// findLocked returns the intent an answer is for: by tenant and id, or
// by id alone when only one intent has it (an answer to a record whose
// tenant could not be read). t.mu must be held.
func (t *Tracker) findLocked(res *wire.Result) *intentRec {
	if r := t.mu.intents[intentKey(res.Tenant, res.IntentID)]; r != nil {
		return r
	}
	if ks := t.mu.byID[res.IntentID]; len(ks) == 1 {
		return t.mu.intents[ks[0]]
	}
	return nil
}

func (t *Tracker) answer(res *wire.Result, topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.answers++
	r := t.findLocked(res)
	if r == nil {
		t.mu.strays[res.Status]++
		if res.Error != nil && (len(t.mu.strayWhy) < 50 || t.mu.strayWhy[strayReason(res)] > 0) {
			t.mu.strayWhy[strayReason(res)]++
		}
		return
	}
	if !codes.Terminal(res.Status) {
		r.Pending++
		return
	}
	a := answerRec{Status: res.Status, Topic: topic, ReplyToError: res.ReplyToError}
	if res.Error != nil {
		a.Code = res.Error.Code
	}
	r.Terminal = append(r.Terminal, res.Status)
	r.Answers = append(r.Answers, a)
}

// get returns a copy of one intent's record.
func (t *Tracker) get(tenant, id string) (intentRec, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.mu.intents[intentKey(tenant, id)]
	if r == nil {
		return intentRec{}, false
	}
	return *r, true
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
	return t.follow(ctx, brokers, topic, nil, opts...)
}

// follow feeds every answer on topic to the tracker until ctx ends; done,
// if not nil, is closed when it stopped.
func (t *Tracker) follow(ctx context.Context, brokers []string, topic string, done chan<- struct{}, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)...)
	if err != nil {
		return err
	}
	go func() {
		defer cl.Close()
		if done != nil {
			defer close(done)
		}
		next := map[int32]int64{} // per partition, the offset after the last record read
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				// A consumer that resets (an out-of-range fetch) would
				// read the topic again from the start: an answer is
				// counted once, by its offset.
				if r.Offset < next[r.Partition] {
					return
				}
				next[r.Partition] = r.Offset + 1
				if res, err := wire.DecodeResult(r.Value); err == nil {
					t.answer(res, topic)
				}
			})
		}
	}()
	return nil
}

// strayReason names why a command was answered as it was.
func strayReason(res *wire.Result) string {
	msg := res.Error.Message
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return res.Status + " " + res.Error.Code + ": " + msg
}
