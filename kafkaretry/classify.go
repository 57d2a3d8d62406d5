// Package kafkaretry is the one judge of whether an error of a request to
// Kafka is worth waiting out, and the one loop that waits one out. Every
// broker-retry loop of the product asks Classify (or Retriable), so that a
// leader moving, a coordinator loading or a broker restarting are waited
// out alike everywhere, and an authorization the cluster refused is
// lasting everywhere. The style is franz-go's own: kerr's Retriable flag
// and kgo.IsRetryableBrokerErr, with the cases the product knows better
// named one by one, each with its reason.
package kafkaretry

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/kafkaconfig"
)

// Kind is what an error calls for.
type Kind int

const (
	// Verdict: the broker (or the client) answered this request, and the
	// same request would get the same answer: fenced, invalid, too large,
	// closed, cancelled. Not retried.
	Verdict Kind = iota
	// Transient: waiting may fix it. Retried within the caller's budget.
	Transient
	// Refused: authentication or authorization. Lasting until an operator
	// changes the credentials or the ACLs; a starting process gives up.
	Refused
)

func (k Kind) String() string {
	switch k {
	case Transient:
		return "transient"
	case Refused:
		return "refused"
	}
	return "verdict"
}

// refusals are the authorization codes: lasting, whatever kerr says.
var refusals = []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
	kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
	kerr.DelegationTokenAuthorizationFailed, kerr.SaslAuthenticationFailed}

// Classify returns what err calls for and why. The cases, in order:
func Classify(err error) (Kind, string) {
	var ne net.Error
	var auth *kadm.AuthError
	var ke *kerr.Error
	switch {
	case err == nil:
		return Verdict, "no error"
	case errors.Is(err, context.Canceled):
		return Verdict, "the caller gave up"
	case kafkaconfig.Definite(err):
		return Refused, "TLS or SASL refused: the configuration or the credentials must change"
	case errors.As(err, &auth):
		return Refused, "the cluster's ACLs refused the request"
	case isRefusal(err):
		return Refused, "the cluster's ACLs refused the request"
	case errors.Is(err, context.DeadlineExceeded):
		return Transient, "a request's own deadline passed: the broker may be slow or away"
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Transient, "the broker was not reached, or the connection broke"
	case kgo.IsRetryableBrokerErr(err):
		return Transient, "the client lost its connection to the broker mid-request"
	case errors.Is(err, kerr.ConcurrentTransactions):
		// kerr calls it not retriable; it means the coordinator is still
		// ending this producer's previous transaction. A Begin that got
		// it is the exception (txn: franz-go fails the producer for good).
		return Transient, "the coordinator is still ending the previous transaction"
	case errors.As(err, &ke) && ke.Retriable:
		return Transient, "the broker calls it retriable: a leader, a coordinator or replicas moving"
	case errors.As(err, &ke):
		return Verdict, "the broker's answer to this request"
	}
	return Verdict, "not an error of reaching the broker"
}

// Retriable reports whether err is Transient.
func Retriable(err error) bool {
	k, _ := Classify(err)
	return k == Transient
}

// IsRefused reports whether err is Refused: lasting until an operator acts.
func IsRefused(err error) bool {
	k, _ := Classify(err)
	return k == Refused
}

func isRefusal(err error) bool {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}
