package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/internal/httpserve"
	"github.com/atmostonce/toolexec/kafkaconfig"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Each attempt registers the same collector: a failed attempt's are
// unregistered, so the next may register them again.
func TestStartPatientlyWaitsForAPassingFailure(t *testing.T) {
	tries := 0
	reg := prometheus.NewRegistry()
	undo, err := StartPatiently(context.Background(), Start{What: "start", Attempt: time.Minute, Log: quiet, Reg: reg, Passing: func(err error) bool { return !Lasting(err) }},
		func(_ context.Context, r prometheus.Registerer) error {
			r.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "starts_total"}))
			if tries++; tries < 3 {
				return errors.New("topic tool.intents does not exist")
			}
			return nil
		})
	if err != nil || tries != 3 {
		t.Fatalf("err %v after %d tries, want success at the third", err, tries)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 1 {
		t.Fatalf("%d metric families registered, want the last attempt's one", len(mfs))
	}
	undo()
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("after undo: %d metric families registered, want none (a restart registers them again)", len(mfs))
	}
}

func TestStartPatientlyStopsAtALastingFailure(t *testing.T) {
	errBadConfig := errors.New("bad config")
	for _, lasting := range []error{
		fmt.Errorf("x: %w", errBadConfig),
		fmt.Errorf("connect: %w", kafkaconfig.ErrSASL),
		fmt.Errorf("list topics: %w", kerr.TopicAuthorizationFailed),
	} {
		tries := 0
		_, err := StartPatiently(context.Background(), Start{What: "start", Attempt: time.Minute, Log: quiet, Reg: prometheus.NewRegistry(),
			Passing: func(err error) bool { return !Lasting(err, errBadConfig) }},
			func(context.Context, prometheus.Registerer) error { tries++; return lasting })
		if !errors.Is(err, lasting) || tries != 1 {
			t.Errorf("%v: err %v after %d tries, want it at once", lasting, err, tries)
		}
	}
}

// A broker away for longer than one attempt's bound no longer ends the
// start (the process would exit and crash-loop): every attempt that runs
// out of time is followed by another, each a turn of its liveness loop,
// until one succeeds; only ctx's end stops it.
func TestStartPatientlyOutlastsAnAttempt(t *testing.T) {
	live := httpserve.NewLiveness()
	tries := 0
	_, err := StartPatiently(context.Background(), Start{What: "executor start", Attempt: 50 * time.Millisecond, Log: quiet, Reg: prometheus.NewRegistry(),
		Passing: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, Live: live},
		func(ctx context.Context, _ prometheus.Registerer) error {
			if tries++; tries < 3 {
				<-ctx.Done() // a broker that does not answer within the attempt
				return ctx.Err()
			}
			return nil
		})
	if err != nil || tries != 3 {
		t.Fatalf("err %v after %d tries, want success at the third, past two attempts' bounds", err, tries)
	}
	if stalled := live.Stalled(); len(stalled) != 0 {
		t.Errorf("the start ended, its loop still counts: %v", stalled)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tries = 0
	_, err = StartPatiently(ctx, Start{What: "start", Attempt: time.Minute, Log: quiet, Reg: prometheus.NewRegistry(), Passing: func(error) bool { return true }},
		func(context.Context, prometheus.Registerer) error {
			if tries++; tries == 2 {
				cancel() // the process is told to stop
			}
			return errors.New("unreachable")
		})
	if err == nil || tries != 2 {
		t.Fatalf("after ctx ended: err %v, %d tries", err, tries)
	}
}

// Lasting is the one classifier's Refused (kafkaretry), plus the
// caller's own sentinels: an authorization that kadm reports as its own
// error type is as lasting as the bare code.
func TestLastingIsTheClassifiersRefusal(t *testing.T) {
	errBadConfig := errors.New("bad config")
	for err, want := range map[error]bool{
		kerr.TopicAuthorizationFailed:                           true,
		&kadm.AuthError{Err: kerr.ClusterAuthorizationFailed}:   true,
		fmt.Errorf("%w: wrong password", kafkaconfig.ErrSASL):   true,
		fmt.Errorf("load: %w", errBadConfig):                    true,
		kerr.NotLeaderForPartition:                              false,
		io.EOF:                                                  false,
		fmt.Errorf("%w: no broker", kafkaconfig.ErrUnreachable): false,
	} {
		if got := Lasting(err, errBadConfig); got != want {
			t.Errorf("Lasting(%v) = %v, want %v", err, got, want)
		}
	}
}
