// Package testpki makes a throwaway certificate authority for tests: a CA,
// server and client certificates it signed, and a second CA that signed
// nothing (the "wrong CA"), written as PEM files in a test's temp dir.
// Keys are ECDSA P-256; certificates are valid from an hour ago to a day
// from now. For tests only.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// PKI is one test's certificate authority.
type PKI struct {
	Dir         string
	CAFile      string // PEM of the CA
	OtherCAFile string // PEM of a CA that signed nothing here
	Pool        *x509.CertPool

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// Pair is a certificate and its key, as files and loaded.
type Pair struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

var serial atomic.Int64

// New makes a CA in t.TempDir().
func New(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir()}
	p.ca, p.caKey = selfSigned(t, "toolexec test CA")
	p.CAFile = writePEM(t, p.Dir, "ca.pem", "CERTIFICATE", p.ca.Raw)
	other, _ := selfSigned(t, "another CA")
	p.OtherCAFile = writePEM(t, p.Dir, "other-ca.pem", "CERTIFICATE", other.Raw)
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(p.ca)
	return p
}

// Server signs a server certificate for the given IPs and DNS names.
func (p *PKI) Server(t testing.TB, name string, ips []net.IP, dns []string) Pair {
	return p.sign(t, name, ips, dns, x509.ExtKeyUsageServerAuth)
}

// Client signs a client certificate with common name cn.
func (p *PKI) Client(t testing.TB, cn string) Pair {
	return p.sign(t, cn, nil, nil, x509.ExtKeyUsageClientAuth)
}

// Loopback is a server certificate for 127.0.0.1 and localhost.
func (p *PKI) Loopback(t testing.TB, name string) Pair {
	return p.Server(t, name, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
}

func (p *PKI) sign(t testing.TB, cn string, ips []net.IP, dns []string, usage x509.ExtKeyUsage) Pair {
	t.Helper()
	key := newKey(t)
	tmpl := template(cn)
	tmpl.IPAddresses, tmpl.DNSNames = ips, dns
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{
		CertFile: writePEM(t, p.Dir, cn+".pem", "CERTIFICATE", der),
		KeyFile:  writePEM(t, p.Dir, cn+".key", "PRIVATE KEY", kder),
		TLS:      tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
}

func selfSigned(t testing.TB, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl := template(cn)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func template(cn string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano() + serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
