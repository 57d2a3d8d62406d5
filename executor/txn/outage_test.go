package txn

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrokerUnreachable: a refused dial (a broker mid-restart) is waited
// out, a verdict on this producer is not.
func TestBrokerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, dialErr := net.Dial("tcp", addr)
	if dialErr == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	cases := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("unable to dial: %w", dialErr), true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("producer ID has a fatal, unrecoverable error, err: %w", fmt.Errorf("unable to initialize a producer ID: %w", io.EOF)), true},
		{kerr.CoordinatorNotAvailable, true},
		{kerr.ConcurrentTransactions, true},
		{kerr.ProducerFenced, false},
		{kerr.InvalidProducerEpoch, false},
		{kgo.ErrClientClosed, false},
	}
	for _, c := range cases {
		if got := BrokerUnreachable(c.err); got != c.want {
			t.Errorf("BrokerUnreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
