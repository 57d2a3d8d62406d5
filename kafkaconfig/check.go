package kafkaconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	// ErrTLS: the TLS handshake failed: the broker's certificate did not
	// verify against ssl.ca.location (or its host name did not match), the
	// broker refused our client certificate, or it does not speak TLS.
	ErrTLS = errors.New("kafka: TLS")
	// ErrSASL: the broker refused our credentials or mechanism.
	ErrSASL = errors.New("kafka: SASL authentication")
	// ErrUnreachable: no seed broker answered within CheckTimeout.
	ErrUnreachable = errors.New("kafka: no broker answered")
)

// CheckTimeout bounds Check: the dial, TLS handshake, SASL exchange and
// one metadata request to each seed. Long enough for a loaded machine,
// short enough that a wrong file fails a start instead of stalling it.
const CheckTimeout = 15 * time.Second

// Check connects to the seed brokers with opts and sends one metadata
// request (asking for no topic), without retrying. It returns nil when one
// seed answers, else the first seed's failure classified as ErrTLS,
// ErrSASL or ErrUnreachable (errors.Is), with the cause. It blocks for at
// most CheckTimeout (less if ctx ends first).
func Check(ctx context.Context, seeds []string, opts ...kgo.Opt) error {
	if len(seeds) == 0 {
		return fmt.Errorf("%w: no seed brokers (--brokers or bootstrap.servers)", ErrConfig)
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, opts...), kgo.SeedBrokers(seeds...))...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer cl.Close()
	var first error
	for i, b := range cl.SeedBrokers() {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		_, err := b.Request(ctx, req)
		if err == nil {
			return nil
		}
		if first == nil {
			first = Classify(seeds[i], err)
		}
	}
	return first
}

// Definite reports whether err (from Check) will not go away by waiting:
// a TLS or SASL failure. An unreachable broker may be restarting.
func Definite(err error) bool { return errors.Is(err, ErrTLS) || errors.Is(err, ErrSASL) }

// Classify wraps a connection error to broker with ErrTLS, ErrSASL or
// ErrUnreachable, and a hint of the likely cause.
func Classify(broker string, err error) error {
	switch {
	case isVerifyError(err):
		return fmt.Errorf("%w: %s: the broker's certificate did not verify (check ssl.ca.location and ssl.endpoint.identification.algorithm): %w", ErrTLS, broker, err)
	case isRecordHeaderError(err):
		return fmt.Errorf("%w: %s does not speak TLS (is security.protocol right?): %w", ErrTLS, broker, err)
	case isTLSAlert(err):
		return fmt.Errorf("%w: %s refused the TLS handshake (a client certificate required or refused?): %w", ErrTLS, broker, err)
	case isSASLError(err):
		return fmt.Errorf("%w: %s refused the credentials (check sasl.mechanism, sasl.username, sasl.password): %w", ErrSASL, broker, err)
	}
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) {
		return fmt.Errorf("%w: %s closed the connection at once (a TLS or SASL mismatch with the listener? check security.protocol): %w", ErrUnreachable, broker, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnreachable, broker, err)
}

func isVerifyError(err error) bool {
	var (
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ci  x509.CertificateInvalidError
		cve *tls.CertificateVerificationError
		uaP *x509.UnknownAuthorityError
		heP *x509.HostnameError
		ciP *x509.CertificateInvalidError
	)
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &cve) ||
		errors.As(err, &uaP) || errors.As(err, &heP) || errors.As(err, &ciP)
}

func isRecordHeaderError(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh)
}

// isTLSAlert: the broker ended the handshake with an alert (it wanted a
// client certificate, or did not trust ours).
func isTLSAlert(err error) bool {
	var ae tls.AlertError
	if errors.As(err, &ae) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Error(), "tls: ")
}

func isSASLError(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState)
}
