package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/kafkaconfig"
)

// The pauses between start attempts: short at first (a broker restart
// takes seconds), then capped so that a long wait does not flood the log.
const (
	startFirstPause = time.Second
	startMaxPause   = 15 * time.Second
)

// StartPatiently calls start until it succeeds, fails in a way waiting
// cannot cure (passing says false), ctx ends, or within has passed, pausing between
// attempts and logging each failure. start's context ends with within.
// Each attempt registers its metrics through its own Registerer over reg;
// a failed attempt's collectors are unregistered, so the next one may
// register them again.
//
// Why: on a first install the processes start in any order with their
// broker and with the Job that creates the topics, and a broker may be
// restarting. A process that exits at once crash-loops, and the kubelet's
// back-off then keeps it down for minutes after the broker and the topics
// are there. within is the longest legitimate start; the startup probes
// of deploy/k8s are sized to it.
func StartPatiently(ctx context.Context, within time.Duration, what string, log *slog.Logger, reg prometheus.Registerer,
	start func(context.Context, prometheus.Registerer) error, passing func(error) bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	pause := startFirstPause
	for attempt := 1; ; attempt++ {
		ar := &attemptRegisterer{Registerer: reg}
		err := start(ctx, ar)
		if err != nil {
			ar.undo()
		}
		if err == nil || !passing(err) || ctx.Err() != nil {
			return err
		}
		log.Warn(what+" failed; retrying", "err", err, "attempt", attempt, "pause", pause)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up after %s)", err, within)
		case <-time.After(pause):
		}
		pause = min(2*pause, startMaxPause)
	}
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
	if kafkaconfig.Definite(err) {
		return true
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed, kerr.DelegationTokenAuthorizationFailed:
			return true
		}
	}
	return false
}
