package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
)

// A client started while a partition of its reply topic has no leader (on
// a cluster, for the seconds after its leader died) waits for the
// election instead of failing: `executor send` right after
// `deploy/kafka/node kill` failed at once with "unable to dial".
func TestClientStartWaitsOutALeaderElection(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "tool.intents", "tool.reply.x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The leader is gone until released: every ListOffsets request's
	// connection drops until then, as a dial to a killed node fails.
	var refused atomic.Int32
	var led atomic.Bool
	released := make(chan struct{})
	c.ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if led.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		return nil, errors.New("the leader is down"), true // kfake drops the connection
	})
	go func() {
		time.Sleep(3 * time.Second)
		led.Store(true)
		close(released)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := client.New(ctx, client.Config{Brokers: c.ListenAddrs(), ReplyTo: "tool.reply.x"})
	if err != nil {
		t.Fatalf("client.New during an election: %v", err)
	}
	defer cl.Close()
	select {
	case <-released:
	default:
		t.Fatalf("client.New returned while partition 1 had no leader (%d refusals): its start offset there is unknown", refused.Load())
	}
}

// An authorization error is not waited out.
func TestClientStartFailsAtOnceOnAFatalError(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "tool.intents", "tool.reply.x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return kfakeresp.ListOffsetsError(r.(*kmsg.ListOffsetsRequest), func(p int32) bool { return p == 0 }, kerr.TopicAuthorizationFailed), nil, true
	})
	start := time.Now()
	_, err = client.New(context.Background(), client.Config{Brokers: c.ListenAddrs(), ReplyTo: "tool.reply.x"})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("client.New = %v after %v, want an authorization error at once", err, time.Since(start))
	}
}
