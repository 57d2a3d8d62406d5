package kafkaconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/atmostonce/toolexec/internal/secretref"
)

// MaxFileBytes bounds a properties file: a dozen settings are a few
// hundred bytes; a megabyte is a wrong path.
const MaxFileBytes = 1 << 20

// setters are the supported properties. A property not listed is an
// error: a typo (ssl.ca.locaton) must not silently fall back to an
// unverified or unauthenticated connection.
var setters = map[string]func(c *Config, v string){
	"bootstrap.servers":                     func(c *Config, v string) { c.BootstrapServers = splitList(v) },
	"security.protocol":                     func(c *Config, v string) { c.SecurityProtocol = strings.ToUpper(v) },
	"sasl.mechanism":                        func(c *Config, v string) { c.SASLMechanism = strings.ToUpper(v) },
	"sasl.mechanisms":                       func(c *Config, v string) { c.SASLMechanism = strings.ToUpper(v) },
	"sasl.username":                         func(c *Config, v string) { c.Username = v },
	"sasl.password":                         func(c *Config, v string) { c.Password = v },
	"ssl.ca.location":                       func(c *Config, v string) { c.CALocation = v },
	"ssl.certificate.location":              func(c *Config, v string) { c.CertLocation = v },
	"ssl.key.location":                      func(c *Config, v string) { c.KeyLocation = v },
	"ssl.endpoint.identification.algorithm": func(c *Config, v string) { c.EndpointIdentification = strings.ToLower(v) },
	"sasl.oauthbearer.method":               func(c *Config, v string) { c.OAuth.Method = strings.ToLower(v) },
	"sasl.oauthbearer.client.id":            func(c *Config, v string) { c.OAuth.ClientID = v },
	"sasl.oauthbearer.client.secret":        func(c *Config, v string) { c.OAuth.ClientSecret = v },
	"sasl.oauthbearer.token.endpoint.url":   func(c *Config, v string) { c.OAuth.TokenEndpoint = v },
	"sasl.oauthbearer.scope":                func(c *Config, v string) { c.OAuth.Scope = v },
	"sasl.oauthbearer.extensions":           func(c *Config, v string) { c.OAuth.Extensions = parseExtensions(v) },
	"sasl.aws.session.token":                func(c *Config, v string) { c.AWSSessionToken = v },
}

// unsupported are standard properties we know and refuse, with why.
var unsupported = map[string]string{
	"ssl.key.password":     "encrypted private keys are not supported: give an unencrypted key file readable only by this process",
	"sasl.kerberos.keytab": "GSSAPI (Kerberos) is not supported",
}

// Load parses the properties file at path. An empty path is the zero
// Config (plaintext, unauthenticated).
func Load(path string) (*Config, error) {
	if path == "" {
		c := &Config{}
		return c, c.validate()
	}
	b, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Parse(b, path, secretref.ExpandWith, os.LookupEnv)
}

func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	return os.ReadFile(path)
}

// Expander expands the secret references of a value (secretref.ExpandWith).
type Expander func(s string, env secretref.Lookup) (string, error)

// Parse parses the content of a properties file; source names it in
// errors. Values are expanded with expand, reading the environment with env.
func Parse(data []byte, source string, expand Expander, env secretref.Lookup) (*Config, error) {
	c := &Config{Source: source}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxFileBytes)
	for n := 1; sc.Scan(); n++ {
		if err := c.parseLine(sc.Text(), n, expand, env); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s%w", ErrConfig, c.where(), err)
	}
	return c, c.validate()
}

func (c *Config) parseLine(line string, n int, expand Expander, env secretref.Lookup) error {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' || line[0] == '!' {
		return nil
	}
	key, raw, ok := strings.Cut(line, "=")
	key = strings.TrimSpace(key)
	if !ok {
		return fmt.Errorf("%w: %sline %d: want property=value", ErrConfig, c.where(), n)
	}
	if why, known := unsupported[key]; known {
		return c.errf(key, "%s", why)
	}
	set, known := setters[key]
	if !known {
		return fmt.Errorf("%w: %sline %d: unknown property %q (supported: see package kafkaconfig)", ErrConfig, c.where(), n, key)
	}
	v, err := expand(strings.TrimSpace(raw), env)
	if err != nil {
		return c.errf(key, "%v", err)
	}
	set(c, v)
	return nil
}

// parseExtensions reads "k=v,k2=v2" (librdkafka's format).
func parseExtensions(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range splitList(s) {
		k, v, _ := strings.Cut(kv, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}
