package kafkaconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/internal/secretref"
)

func parse(t *testing.T, text string, env map[string]string) (*Config, error) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return Parse([]byte(text), "test.properties", secretref.ExpandWith, lookup)
}

func TestParseReadsTheLibrdkafkaProperties(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse(t, `
# a comment
! another
bootstrap.servers = 127.0.0.1:19094, 127.0.0.2:19094
security.protocol=sasl_ssl
sasl.mechanisms=SCRAM-SHA-512
sasl.username=${env:KUSER}
sasl.password=${file:`+pw+`}
ssl.ca.location=/etc/ca.pem
ssl.endpoint.identification.algorithm=none
`, map[string]string{"KUSER": "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if c.SecurityProtocol != SASLSSL || c.SASLMechanism != MechScram512 || c.Username != "agent" || c.Password != "from-file" ||
		c.CALocation != "/etc/ca.pem" || c.EndpointIdentification != "none" || strings.Join(c.BootstrapServers, ",") != "127.0.0.1:19094,127.0.0.2:19094" {
		t.Fatalf("parsed %#v", c)
	}
	if got := c.Seeds(""); len(got) != 2 {
		t.Fatalf("seeds from bootstrap.servers: %v", got)
	}
	if got := c.Seeds("h:1"); len(got) != 1 || got[0] != "h:1" {
		t.Fatalf("a --brokers flag wins: %v", got)
	}
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, "from-file") || !strings.Contains(s, "sasl.username=agent") {
			t.Fatalf("String must name the user and hide the password: %s", s)
		}
	}
}

// Every refusal names the property (or line) at fault, and none quotes a
// secret.
func TestParseErrorsNameTheProperty(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"unknown property", "security.protocol=SSL\nssl.ca.locaton=/x", `line 2: unknown property "ssl.ca.locaton"`},
		{"no equals sign", "security.protocol", "line 1: want property=value"},
		{"missing variable", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=${env:NOPE}", "sasl.password: secret reference: ${env:NOPE}: the environment variable NOPE is not set"},
		{"missing file", "sasl.password=${file:/nonexistent/pw}", "sasl.password: secret reference: ${file:/nonexistent/pw}"},
		{"bad protocol", "security.protocol=TLS", `security.protocol: "TLS" is not one of`},
		{"no mechanism", "security.protocol=SASL_SSL\nsasl.username=u\nsasl.password=p", "sasl.mechanism: required with security.protocol=SASL_SSL"},
		{"unsupported mechanism", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI", `sasl.mechanism: "GSSAPI" is not supported`},
		{"sasl on plaintext", "sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p", "sasl.* properties are set but PLAINTEXT does not use SASL"},
		{"ssl on sasl_plaintext", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\nssl.ca.location=/ca", "ssl.* properties are set but SASL_PLAINTEXT does not use TLS"},
		{"cert without key", "security.protocol=SSL\nssl.certificate.location=/c.pem", "needs both ssl.certificate.location and ssl.key.location"},
		{"no password", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=u", "SCRAM-SHA-256 needs sasl.username and sasl.password"},
		{"encrypted key", "ssl.key.password=x", "ssl.key.password: encrypted private keys are not supported"},
		{"oauth method", "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER", `sasl.oauthbearer.method: "": only oidc`},
		{"endpoint identification", "ssl.endpoint.identification.algorithm=sometimes", `"sometimes" is not https or none`},
	}
	for _, c := range cases {
		_, err := parse(t, c.text, nil)
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "test.properties") {
			t.Errorf("%s: error %v, want one naming test.properties and containing %q", c.name, err, c.want)
		}
	}
}

func TestLoadOfNoFileIsPlaintext(t *testing.T) {
	c, err := Load("")
	if err != nil || c.TLS() || c.SASL() {
		t.Fatalf("Load(\"\"): %v %v", c, err)
	}
	opts, err := c.Opts()
	if err != nil || len(opts) != 0 {
		t.Fatalf("plaintext opts %v %v", opts, err)
	}
	if _, err := Load("/nonexistent/client.properties"); err == nil || !strings.Contains(err.Error(), "/nonexistent/client.properties") {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestOptsNameTheMissingCertificateFile(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ text, want string }{
		{"security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem", "ssl.ca.location: open /nonexistent/ca.pem"},
		{"security.protocol=SSL\nssl.ca.location=" + empty, "holds no PEM certificate"},
		{"security.protocol=SSL\nssl.certificate.location=/nonexistent/c.pem\nssl.key.location=/nonexistent/k.pem", "ssl.certificate.location: /nonexistent/c.pem"},
	}
	for _, c := range cases {
		cfg, err := parse(t, c.text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.Opts(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}
