package tools

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/atmostonce/toolexec/internal/secretref"
)

// reservedHeaders are set by the adapter itself (or by net/http), and a
// tool's headers may not replace them: the downstream key above all, which
// is what makes a retry safe.
var reservedHeaders = map[string]bool{
	"Idempotency-Key": true, "X-Tool-Tenant": true, "X-Tool-Key": true, "Traceparent": true, "Tracestate": true,
	"Content-Type": true, "Content-Length": true, "Accept": true, "Host": true,
	"Connection": true, "Transfer-Encoding": true, "Te": true, "Upgrade": true, "Trailer": true,
	"Keep-Alive": true, "Proxy-Connection": true,
}

// checkCredentials validates headers and tls as written (the references
// are expanded later, when the adapter is built).
func checkCredentials(c *checker, s Spec) {
	a := s.auth()
	for _, name := range sortedKeys(a.Headers) {
		switch {
		case !validHeaderName(name):
			c.fail("headers."+name, nil, "%s is not a valid header name", quoteBounded(name))
		case reservedHeaders[http.CanonicalHeaderKey(name)]:
			c.fail("headers."+name, nil, "set by the adapter itself; cannot be configured")
		}
	}
	if !c.ok("tls") || a.TLS.IsZero() {
		return
	}
	if (a.TLS.Cert == "") != (a.TLS.Key == "") {
		c.fail("tls", nil, "a client certificate needs both cert and key")
	}
	for field, raw := range map[string]string{"url": s.URL, "probe_url": s.ProbeURL} {
		if u, err := url.Parse(raw); raw != "" && err == nil && u.Scheme != "https" {
			c.fail("tls", nil, "set, but %s is not https", field)
		}
	}
}

func validHeaderName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// credentials are a tool's expanded headers and TLS config, and the
// redactor of its secrets. Built once per adapter; read-only after.
type credentials struct {
	headers http.Header
	tls     *tls.Config // nil: the system's defaults
	redact  *secretref.Redactor
}

// loadCredentials expands the header references and reads the TLS files
// of s. Errors name the tool and the field, never a secret's value.
func loadCredentials(s Spec) (*credentials, error) {
	a := s.auth()
	cr := &credentials{headers: http.Header{}}
	var secrets []string
	for _, name := range sortedKeys(a.Headers) {
		v, err := secretref.Expand(a.Headers[name])
		if err != nil {
			return nil, credErr(s, "headers."+name, "%v", err)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, credErr(s, "headers."+name, "the value holds a line break or NUL")
		}
		cr.headers.Set(name, v)
		secrets = append(secrets, v)
	}
	cr.redact = secretref.NewRedactor(secrets...)
	if a.TLS.IsZero() {
		return cr, nil
	}
	tc, err := tlsConfig(s.Name, a.TLS)
	if err != nil {
		return nil, err
	}
	cr.tls = tc
	return cr, nil
}

func tlsConfig(tool string, f TLSFiles) (*tls.Config, error) {
	s := Spec{Name: tool}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		b, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, credErr(s, "tls.ca", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, credErr(s, "tls.ca", "%s holds no PEM certificate", f.CA)
		}
		tc.RootCAs = pool
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, credErr(s, "tls.cert", "%s with key %s: %v", f.Cert, f.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func credErr(s Spec, field, format string, args ...any) error {
	return &FieldError{Index: -1, Tool: s.Name, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// apply adds the configured headers to a request's (after the adapter's
// own, which they cannot name).
func (cr *credentials) apply(h http.Header) {
	for k, vs := range cr.headers {
		h[k] = vs
	}
}

// scrub removes every secret from what an outcome carries out of the
// process: its message (a 401 body may echo the Authorization header) and
// the strings of its result.
func (cr *credentials) scrub(out Outcome) Outcome {
	if cr.redact.Empty() {
		return out
	}
	out.Message = cr.redact.Redact(out.Message)
	out.Result = cr.scrubValue(out.Result)
	return out
}

func (cr *credentials) scrubValue(v any) any {
	switch x := v.(type) {
	case string:
		return cr.redact.Redact(x)
	case map[string]any:
		for k, e := range x {
			x[k] = cr.scrubValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = cr.scrubValue(e)
		}
	}
	return v
}
