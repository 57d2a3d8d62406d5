package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// NetProxy is a toxiproxy (used as a library) in front of one upstream.
// Two are used: the executors reach the ledger only through "tools" (a
// toxic there is a network fault between the executors, or the
// reconciler, and the tool), and the broker only through "kafka" (a fault
// between the executors and the broker; see Run for the listener).
type NetProxy struct {
	name string
	p    *toxiproxy.Proxy
}

// NewNetProxy listens on listen ("127.0.0.1:0" for a free port) and
// forwards to upstream.
func NewNetProxy(name, listen, upstream string) (*NetProxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, listen, upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("chaos: toxiproxy %s: %w", name, err)
	}
	return &NetProxy{name: name, p: p}, nil
}

// Addr is the address clients must use.
func (n *NetProxy) Addr() string { return n.p.Listen }

// Close stops the proxy.
func (n *NetProxy) Close() { n.p.Stop() }

// Toxic names the network faults the harness injects.
type Toxic struct {
	Kind   string // latency, reset_peer, timeout
	Stream string // upstream (requests) or downstream (answers)
	Attrs  string // JSON attributes
}

func (t Toxic) String() string { return t.Kind + "/" + t.Stream + " " + t.Attrs }

// toolToxics is the menu between the executors and the tools; latency
// stays well under the tools' pending_ttl, so a delayed request always
// reaches the ledger before a probe asks for it.
var toolToxics = []Toxic{
	{"latency", "downstream", `{"latency":1500,"jitter":500}`},
	{"latency", "upstream", `{"latency":800,"jitter":300}`},
	{"reset_peer", "upstream", `{"timeout":0}`},
	{"reset_peer", "downstream", `{"timeout":0}`},
	{"timeout", "downstream", `{"timeout":1500}`},
	{"timeout", "upstream", `{"timeout":0}`},
}

// kafkaToxics is the menu between the executors and the broker: slow
// answers, slow requests, connections reset, and connections that go
// silent (requests time out, sessions may expire: a zombie by network).
var kafkaToxics = []Toxic{
	{"latency", "downstream", `{"latency":400,"jitter":200}`},
	{"latency", "upstream", `{"latency":1200,"jitter":400}`},
	{"reset_peer", "upstream", `{"timeout":500}`},
	{"reset_peer", "downstream", `{"timeout":0}`},
	{"timeout", "downstream", `{"timeout":2000}`},
	{"timeout", "upstream", `{"timeout":0}`},
}

// Add installs t (one toxic of a kind per stream); Remove takes them away
// again.
func (n *NetProxy) Add(t Toxic) error {
	js := fmt.Sprintf(`{"name":"chaos-%s-%s","type":%q,"stream":%q,"toxicity":1.0,"attributes":%s}`, t.Kind, t.Stream, t.Kind, t.Stream, t.Attrs)
	_, err := n.p.Toxics.AddToxicJson(strings.NewReader(js))
	return err
}

// Remove removes every toxic.
func (n *NetProxy) Remove() { n.p.Toxics.ResetToxics(context.Background()) }
