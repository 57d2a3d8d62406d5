package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// commandID derives a command's intent id from its subject, its type and
// the round it belongs to. Deterministic, so that a command sent again
// (after a restart, or by another reconciler that took over the
// partition) has the id of the first: the executor's saga then sees one
// compensation, whose origin is that id, however often it arrives.
func commandID(s Subject, typ string, round int) string {
	h := sha256.New()
	for _, part := range []string{"toolexec/reconciler-command/v1", s.Tenant, s.Key, s.Phase.String(), s.CallID, typ, strconv.Itoa(round)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return "rc-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// intent is the wire form of c, from by.
func (c *Command) intent(by string) *wire.Intent {
	in := &wire.Intent{V: wire.Version, Type: c.Type, ID: c.ID, Tenant: c.Tenant, Key: c.Key,
		By: by, Reason: c.Reason, CallID: c.CallID}
	if c.Type == wire.TypeResolve {
		in.Outcome, in.Result, in.Error = c.Outcome, c.Result, c.Err
	}
	return in
}

// produceCommand writes in to its owner partition of the control topic and
// waits for the broker's acknowledgement.
func produceCommand(ctx context.Context, cl *kgo.Client, names topics.Names, partitions int32, in *wire.Intent) error {
	b, err := wire.EncodeIntent(in)
	if err != nil {
		return err
	}
	rk := in.RoutingKey()
	r := &kgo.Record{Topic: names.Control, Partition: wire.Partition(rk, partitions), Key: []byte(rk), Value: b}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("reconciler: produce %s for %s: %w", in.Type, rk, err)
	}
	return nil
}
