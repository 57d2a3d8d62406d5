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
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/kafkaconfig"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Each attempt registers the same collector: a failed attempt's are
// unregistered, so the next may register them again.
func TestStartPatientlyWaitsForAPassingFailure(t *testing.T) {
	tries := 0
	reg := prometheus.NewRegistry()
	err := StartPatiently(context.Background(), time.Minute, "start", quiet, reg, func(_ context.Context, r prometheus.Registerer) error {
		r.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "starts_total"}))
		if tries++; tries < 3 {
			return errors.New("topic tool.intents does not exist")
		}
		return nil
	}, func(err error) bool { return !Lasting(err) })
	if err != nil || tries != 3 {
		t.Fatalf("err %v after %d tries, want success at the third", err, tries)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 1 {
		t.Fatalf("%d metric families registered, want the last attempt's one", len(mfs))
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
		err := StartPatiently(context.Background(), time.Minute, "start", quiet, prometheus.NewRegistry(),
			func(context.Context, prometheus.Registerer) error { tries++; return lasting }, func(err error) bool { return !Lasting(err, errBadConfig) })
		if !errors.Is(err, lasting) || tries != 1 {
			t.Errorf("%v: err %v after %d tries, want it at once", lasting, err, tries)
		}
	}
}

func TestStartPatientlyGivesUpAfterWithin(t *testing.T) {
	start := time.Now()
	err := StartPatiently(context.Background(), 1500*time.Millisecond, "start", quiet, prometheus.NewRegistry(),
		func(context.Context, prometheus.Registerer) error { return errors.New("unreachable") }, func(error) bool { return true })
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}
