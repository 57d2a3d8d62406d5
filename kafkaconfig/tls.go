package kafkaconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsConfig builds the client's TLS config from the ssl.* properties.
// kgo.DialTLSConfig sets ServerName per broker, so host name
// verification needs nothing more; with
// ssl.endpoint.identification.algorithm=none the chain is still verified,
// by hand, against the same roots.
func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CALocation != "" {
		pool, err := loadCAs(c.CALocation)
		if err != nil {
			return nil, c.errf("ssl.ca.location", "%v", err)
		}
		tc.RootCAs = pool
	}
	if c.CertLocation != "" {
		cert, err := tls.LoadX509KeyPair(c.CertLocation, c.KeyLocation)
		if err != nil {
			return nil, c.errf("ssl.certificate.location", "%s with ssl.key.location %s: %v", c.CertLocation, c.KeyLocation, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if c.EndpointIdentification == "none" {
		tc.InsecureSkipVerify = true // the chain is verified below; only the host name is not
		tc.VerifyConnection = verifyChainOnly(tc.RootCAs)
	}
	return tc, nil
}

// loadCAs reads a PEM bundle; a file with no certificate in it is an
// error, not an empty pool that would trust nothing (or, worse, be
// mistaken for "use the system's").
func loadCAs(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func verifyChainOnly(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("kafkaconfig: the broker sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}
