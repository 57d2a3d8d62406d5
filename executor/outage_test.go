package executor

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/atmostonce/toolexec/state"
)

// Outage tells a broker's absence that outlasted BrokerOutage (the
// process may start a new executor) from a verdict on the member (it
// must stop): a fatal begin after refused connections is an outage; a
// broken view, a fence or an authorization failure is not.
func TestOutage(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: begin transaction: %w", ErrFatal, refused), true},
		{fmt.Errorf("%w: the view cannot be written: %w", ErrFatal, state.ErrBroken), false},
		{fmt.Errorf("%w: saga produced an invalid event", ErrFatal), false},
		{errors.New("topicadmin: existing topics are incompatible"), false},
	} {
		if got := Outage(c.err); got != c.want {
			t.Errorf("Outage(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
