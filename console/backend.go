package console

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Backend is what the console reads and does. Its methods must be safe
// for concurrent use: pages are served concurrently.
type Backend interface {
	// Rows are the keys in doubt as of the reconciler's last scan.
	Rows() []reconciler.Row
	// Approvals are the keys awaiting a person's approval as of the
	// reconciler's last scan, oldest first.
	Approvals() []reconciler.ApprovalRow
	// Coverage: the partitions the last scan covered, of how many.
	Coverage() (scanned []int32, partitions int32)
	// Started: by tool, keys whose call may still be running.
	Started() map[string]int
	// ToolErrors: a tool's last errors, newest first.
	ToolErrors(tool string) []reconciler.ToolError
	// Specs: the tools as configured.
	Specs() []tools.Spec
	// History reads a key's committed events, oldest first.
	History(ctx context.Context, tenant, key string) ([]*saga.Event, error)
	// Send sends an operator's command and waits for the executor's answer
	// (reconciler.Resolve).
	Send(ctx context.Context, req reconciler.ResolveRequest) (*wire.Result, error)
}

// ReconcilerBackend is the Backend of a running reconciler: its scan's
// rows, its tools, and the cluster it reads the event log from and sends
// commands to.
type ReconcilerBackend struct {
	*reconciler.Reconciler
	Tools      []tools.Spec
	Brokers    []string
	Names      topics.Names
	ClientOpts []kgo.Opt // TLS, SASL: every client the console makes takes them
}

// Specs returns the configured tools.
func (b *ReconcilerBackend) Specs() []tools.Spec { return b.Tools }

// History reads the key's events from its partition of the event log.
func (b *ReconcilerBackend) History(ctx context.Context, tenant, key string) ([]*saga.Event, error) {
	return eventlog.History(ctx, b.Brokers, b.Names.Events, tenant, key, b.ClientOpts...)
}

// Send produces the command on the control topic and waits for its
// answer.
func (b *ReconcilerBackend) Send(ctx context.Context, req reconciler.ResolveRequest) (*wire.Result, error) {
	req.Brokers, req.Names, req.ClientOpts = b.Brokers, b.Names, b.ClientOpts
	return reconciler.Resolve(ctx, req)
}
