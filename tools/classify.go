package tools

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// notReachedCode names why no connection to the tool was obtained.
func notReachedCode(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return CodeConnectionRefused
	case errors.As(err, &dnsErr):
		return CodeDNS
	case isTimeout(err):
		return CodeDialTimeout
	case isTLS(err):
		return CodeTLS
	}
	return CodeConnect
}

// sentCode names a failure after the connection was obtained.
func sentCode(err error) string {
	switch {
	case isTimeout(err):
		return CodeTimeout
	case isReset(err):
		return CodeReset
	}
	return CodeTransport
}

// probeCode names a probe's network failure; with a probe it does not
// matter whether the GET was sent, the answer is Unknown either way.
func probeCode(err error) string {
	if c := notReachedCode(err); c != CodeConnect && c != CodeDialTimeout {
		return c
	}
	return sentCode(err)
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errNoReplay)
}

func isTLS(err error) bool {
	var (
		header   tls.RecordHeaderError
		alert    tls.AlertError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &header) || errors.As(err, &alert) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}
