package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/internal/httpserve"
	"github.com/atmostonce/toolexec/kafkaretry"
)

// The pauses between start attempts: short at first (a broker restart
// takes seconds), then capped so that a long wait does not flood the log.
const (
	startFirstPause = time.Second
	startMaxPause   = 15 * time.Second
)

// Start says how StartPatiently starts a part of the process.
type Start struct {
	What    string                // names the part in the log and its liveness loop ("executor start")
	Attempt time.Duration         // bounds one attempt: its context's deadline (the part's --broker-outage)
	Passing func(error) bool      // a failure waiting may cure; any other ends the start
	Log     *slog.Logger          //
	Reg     prometheus.Registerer // each attempt registers its metrics through its own Registerer over Reg
	Live    *httpserve.Liveness   // the attempts are a loop of it; nil: none
}

// StartPatiently calls start until it succeeds, fails in a way waiting
// cannot cure (s.Passing says false), or ctx ends, pausing between
// attempts and logging each failure. Each attempt's context ends after
// s.Attempt. A failed attempt's collectors are unregistered, so the next
// one may register them again; undo unregisters the successful one's
// (the part stopped, to be started anew). While it tries, each attempt
// is a turn of the liveness loop s.What.
//
// Why: on a first install the processes start in any order with their
// broker and with the Job that creates the topics, and a broker may be
// restarting or gone for longer. A process that exits crash-loops, and
// the kubelet's back-off then keeps it down for up to 5 minutes after the
// broker and the topics are back. A process that keeps trying is up and
// not ready (/readyz 503) for exactly as long as the broker is away.
func StartPatiently(ctx context.Context, s Start, start func(context.Context, prometheus.Registerer) error) (undo func(), err error) {
	beat := func() {}
	if s.Live != nil {
		s.Live.Loop(s.What, s.Attempt+startMaxPause+time.Minute)
		defer s.Live.Stop(s.What)
		beat = func() { s.Live.Beat(s.What) }
	}
	pause := startFirstPause
	for attempt := 1; ; attempt++ {
		beat()
		ar := &attemptRegisterer{Registerer: s.Reg}
		err := startAttempt(ctx, s.Attempt, ar, start)
		if err == nil {
			return ar.undo, nil
		}
		ar.undo()
		if !s.Passing(err) || ctx.Err() != nil {
			return nil, err
		}
		s.Log.Warn(s.What+" failed; retrying", "err", err, "attempt", attempt, "pause", pause)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
		pause = min(2*pause, startMaxPause)
	}
}

func startAttempt(ctx context.Context, within time.Duration, r prometheus.Registerer, start func(context.Context, prometheus.Registerer) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return start(ctx, r)
}

// attemptRegisterer remembers what one start attempt registered.
type attemptRegisterer struct {
	prometheus.Registerer
	done []prometheus.Collector
}

func (a *attemptRegisterer) Register(c prometheus.Collector) error {
	if err := a.Registerer.Register(c); err != nil {
		return err
	}
	a.done = append(a.done, c)
	return nil
}

func (a *attemptRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := a.Register(c); err != nil {
			panic(err)
		}
	}
}

func (a *attemptRegisterer) undo() {
	for _, c := range a.done {
		a.Registerer.Unregister(c)
	}
}

// Lasting reports whether a start error will not go away by waiting: a
// TLS or SASL failure, an authorization the cluster refused, or one of the
// sentinels given (a bad configuration). !Lasting is the passing test of
// a process whose every other start error may be the broker's or the
// topics' absence.
func Lasting(err error, sentinels ...error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return kafkaretry.IsRefused(err)
}
