package kafkaretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/kafkaconfig"
)

// TestClassify: a refused dial (a broker mid-restart) is waited out, a
// verdict on this producer is not, and a refusal of the ACLs is lasting.
func TestClassify(t *testing.T) {
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
		want Kind
	}{
		{fmt.Errorf("unable to dial: %w", dialErr), Transient},
		{context.DeadlineExceeded, Transient},
		{fmt.Errorf("producer ID has a fatal, unrecoverable error, err: %w", fmt.Errorf("unable to initialize a producer ID: %w", io.EOF)), Transient},
		{kerr.CoordinatorNotAvailable, Transient},
		{kerr.NotLeaderForPartition, Transient},
		{fmt.Errorf("list offsets: %w", kerr.ConcurrentTransactions), Transient},
		{kerr.ProducerFenced, Verdict},
		{kerr.InvalidProducerEpoch, Verdict},
		{kerr.InvalidConfig, Verdict},
		{kgo.ErrClientClosed, Verdict},
		{context.Canceled, Verdict},
		{errors.New("no such topic in the layout"), Verdict},
		{kerr.TopicAuthorizationFailed, Refused},
		{fmt.Errorf("start: %w", kerr.TransactionalIDAuthorizationFailed), Refused},
		{&kadm.AuthError{Err: kerr.ClusterAuthorizationFailed}, Refused},
		{fmt.Errorf("%w: bad password", kafkaconfig.ErrSASL), Refused},
	}
	for _, c := range cases {
		got, why := Classify(c.err)
		if got != c.want || why == "" {
			t.Errorf("Classify(%v) = %v (%q), want %v", c.err, got, why, c.want)
		}
		if Retriable(c.err) != (c.want == Transient) || IsRefused(c.err) != (c.want == Refused) {
			t.Errorf("Retriable or IsRefused of %v disagree with Classify", c.err)
		}
	}
}
