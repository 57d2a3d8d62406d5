package wire_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/wire"
)

// Every readable intent is answered on its own reply address: an intent
// whose id, reply_to and tenant can be read is, whatever its other fields
// hold (any value the msgpack format allows: every type, width, extension,
// non-string map key, nesting, repetition), either decoded with them or
// rejected answerably, with them, so that the executor answers it once on
// its reply_to (executor/partition/step.go: one answer per decided or
// rejected input; a decoded intent's answers go to its waiter's reply_to).
func FuzzReadableIntentIsAnsweredOnItsReplyTo(f *testing.F) {
	for _, seed := range [][]byte{{}, {1, 2, 3}, {0xff, 0xd4, 0xc7, 0x80}, bytes.Repeat([]byte{7}, 64), bytes.Repeat([]byte{0xc1, 9}, 40)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed []byte) {
		g := &valueGen{b: seed}
		env := envelope{id: "id-" + g.token(), replyTo: "agent.replies-" + g.token(), tenant: []string{"", "default", "acme", "t_1-x"}[g.n(4)]}
		value, recordKey := g.intent(env)
		in, rej := wire.DecodeIntent(value, recordKey, wire.FromIntents)
		tenant := env.tenant
		if tenant == "" {
			tenant = wire.DefaultTenant
		}
		switch {
		case rej == nil && (in.ID != env.id || in.ReplyTo != env.replyTo || in.Tenant != tenant):
			t.Fatalf("decoded as %q %q %q, want %+v\n%x", in.ID, in.ReplyTo, in.Tenant, env, value)
		case rej != nil && (!rej.Answerable() || rej.ID != env.id || rej.ReplyTo != env.replyTo || rej.Tenant != tenant):
			t.Fatalf("rejected (%s: %s) as id %q reply_to %q tenant %q, want %+v\n%x", rej.Reason, rej.Detail, rej.ID, rej.ReplyTo, rej.Tenant, env, value)
		}
	})
}

type envelope struct{ id, replyTo, tenant string }

// valueGen draws from the fuzzer's bytes (zero when they run out).
type valueGen struct {
	b []byte
	i int
}

func (g *valueGen) byte() byte {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return g.b[g.i-1]
}

func (g *valueGen) n(max int) int { return int(g.byte()) % max }

func (g *valueGen) token() string { return fmt.Sprintf("%02x%02x", g.byte(), g.byte()) }

var intentFields = []string{"v", "type", "key", "tool", "args", "deadline_ms", "scope", "outcome", "result", "error", "by", "reason", "call_id", "force", "x-unknown", ""}

// intent is a msgpack map holding the envelope (each field once, as a
// string) and up to 7 other fields with any values, in any order, and the
// record's Kafka key (the routing key of the key field when it is a
// string, or anything).
func (g *valueGen) intent(env envelope) ([]byte, []byte) {
	type kv struct {
		k string
		v []byte
	}
	fields := []kv{{"id", enc(env.id)}, {"reply_to", enc(env.replyTo)}}
	if env.tenant != "" {
		fields = append(fields, kv{"tenant", enc(env.tenant)})
	}
	key := ""
	for range g.n(8) {
		name := intentFields[g.n(len(intentFields))]
		v := g.value(0)
		if name == "key" {
			_ = msgpack.Unmarshal(v, &key)
		}
		fields = append(fields, kv{name, v})
	}
	for i := len(fields) - 1; i > 0; i-- { // shuffle
		j := g.n(i + 1)
		fields[i], fields[j] = fields[j], fields[i]
	}
	var buf bytes.Buffer
	buf.Write(mapHeader(len(fields)))
	for _, f := range fields {
		buf.Write(enc(f.k))
		buf.Write(f.v)
	}
	tenant := env.tenant
	if tenant == "" {
		tenant = wire.DefaultTenant
	}
	rk := []byte(wire.RoutingKey(tenant, key))
	if g.n(8) == 0 {
		rk = []byte(g.token())
	}
	return buf.Bytes(), rk
}

// value is one msgpack value of any kind, nested at most 4 deep.
func (g *valueGen) value(depth int) []byte {
	kinds := 14
	if depth >= 4 {
		kinds = 10
	}
	switch g.n(kinds) {
	case 0:
		return []byte{0xc0}
	case 1:
		return enc(g.byte()&1 == 1)
	case 2:
		return enc(int64(binary.BigEndian.Uint64(g.bytes(8))))
	case 3: // an integer of every width, signed or not
		w := g.n(8)
		return append([]byte{[]byte{0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3}[w]}, g.bytes(1<<(w%4))...)
	case 4:
		return enc(math.Float64frombits(binary.BigEndian.Uint64(g.bytes(8))))
	case 5:
		return append([]byte{0xca}, g.bytes(4)...)
	case 6:
		return enc(string(g.bytes(g.n(40))))
	case 7:
		b := g.bytes(g.n(20))
		return append([]byte{0xc4, byte(len(b))}, b...)
	case 8: // an extension of any type, the timestamp (-1) included
		b := g.bytes([]int{1, 2, 4, 8, 16}[g.n(5)])
		typ := g.byte()
		if g.n(3) == 0 {
			typ = 0xff
		}
		return append([]byte{map[int]byte{1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}[len(b)], typ}, b...)
	case 9:
		return []byte{byte(g.n(128))} // a fixint
	case 10, 11: // an array
		n := g.n(5)
		out := []byte{0x90 | byte(n)}
		for range n {
			out = append(out, g.value(depth+1)...)
		}
		return out
	default: // a map, its keys of any kind
		n := g.n(5)
		out := mapHeader(n)
		for range n {
			if g.n(2) == 0 {
				out = append(out, enc(g.token())...)
			} else {
				out = append(out, g.value(depth+1)...)
			}
			out = append(out, g.value(depth+1)...)
		}
		return out
	}
}

func (g *valueGen) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = g.byte()
	}
	return out
}

func mapHeader(n int) []byte { return []byte{0x80 | byte(n)} }

func enc(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
