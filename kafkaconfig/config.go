package kafkaconfig

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConfig is wrapped by every error about the file's content.
var ErrConfig = errors.New("kafkaconfig")

// Security protocols (security.protocol).
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms (sasl.mechanism).
const (
	MechPlain       = "PLAIN"
	MechScram256    = "SCRAM-SHA-256"
	MechScram512    = "SCRAM-SHA-512"
	MechOAuthBearer = "OAUTHBEARER"
	MechAWSMSKIAM   = "AWS_MSK_IAM"
)

// Config is what a client properties file says about reaching the
// cluster. The zero value is plaintext and unauthenticated.
type Config struct {
	Source           string   // the file it came from, for messages; "" for none
	BootstrapServers []string // bootstrap.servers
	SecurityProtocol string   // default PLAINTEXT
	SASLMechanism    string
	Username         string
	Password         string // a secret
	CALocation       string // PEM file of the CAs to trust; empty: the system's
	CertLocation     string // PEM client certificate (mTLS)
	KeyLocation      string // PEM private key of CertLocation, unencrypted
	// EndpointIdentification is "https" (verify the broker's host name,
	// the default) or "none" (verify the chain only).
	EndpointIdentification string
	OAuth                  OAuth
	AWSSessionToken        string // a secret
}

// OAuth holds the OAUTHBEARER settings (method oidc: the client
// credentials grant at TokenEndpoint).
type OAuth struct {
	Method        string
	TokenEndpoint string
	ClientID      string
	ClientSecret  string // a secret
	Scope         string
	Extensions    map[string]string
}

// TLS reports whether connections use TLS.
func (c *Config) TLS() bool { return c.SecurityProtocol == SSL || c.SecurityProtocol == SASLSSL }

// SASL reports whether connections authenticate with SASL.
func (c *Config) SASL() bool {
	return c.SecurityProtocol == SASLPlaintext || c.SecurityProtocol == SASLSSL
}

// Seeds returns the seed brokers: flag (comma-separated) when it is not
// empty, else bootstrap.servers.
func (c *Config) Seeds(flag string) []string {
	if strings.TrimSpace(flag) != "" {
		return splitList(flag)
	}
	return c.BootstrapServers
}

// validate applies the defaults and checks that the settings fit
// together; every error names the property.
func (c *Config) validate() error {
	if c.SecurityProtocol == "" {
		c.SecurityProtocol = Plaintext
	}
	if c.EndpointIdentification == "" {
		c.EndpointIdentification = "https"
	}
	switch c.SecurityProtocol {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
	default:
		return c.errf("security.protocol", "%q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", c.SecurityProtocol)
	}
	if c.EndpointIdentification != "https" && c.EndpointIdentification != "none" {
		return c.errf("ssl.endpoint.identification.algorithm", "%q is not https or none", c.EndpointIdentification)
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	return c.validateSASL()
}

func (c *Config) validateTLS() error {
	if !c.TLS() && (c.CALocation != "" || c.CertLocation != "" || c.KeyLocation != "") {
		return c.errf("security.protocol", "ssl.* properties are set but %s does not use TLS (use SSL or SASL_SSL)", c.SecurityProtocol)
	}
	if (c.CertLocation == "") != (c.KeyLocation == "") {
		return c.errf("ssl.certificate.location", "a client certificate needs both ssl.certificate.location and ssl.key.location")
	}
	return nil
}

func (c *Config) validateSASL() error {
	if !c.SASL() {
		if c.SASLMechanism != "" || c.Username != "" || c.Password != "" {
			return c.errf("security.protocol", "sasl.* properties are set but %s does not use SASL (use SASL_PLAINTEXT or SASL_SSL)", c.SecurityProtocol)
		}
		return nil
	}
	switch c.SASLMechanism {
	case "":
		return c.errf("sasl.mechanism", "required with security.protocol=%s (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM)", c.SecurityProtocol)
	case MechPlain, MechScram256, MechScram512, MechAWSMSKIAM:
		if c.Username == "" || c.Password == "" {
			return c.errf("sasl.username", "%s needs sasl.username and sasl.password", c.SASLMechanism)
		}
	case MechOAuthBearer:
		return c.validateOAuth()
	default:
		return c.errf("sasl.mechanism", "%q is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM)", c.SASLMechanism)
	}
	return nil
}

func (c *Config) validateOAuth() error {
	o := c.OAuth
	if o.Method != "oidc" {
		return c.errf("sasl.oauthbearer.method", "%q: only oidc (the client credentials grant) is supported", o.Method)
	}
	if o.TokenEndpoint == "" || o.ClientID == "" || o.ClientSecret == "" {
		return c.errf("sasl.oauthbearer.token.endpoint.url", "oidc needs sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret")
	}
	return nil
}

func (c *Config) errf(prop, format string, args ...any) error {
	return fmt.Errorf("%w: %s%s: %s", ErrConfig, c.where(), prop, fmt.Sprintf(format, args...))
}

func (c *Config) where() string {
	if c.Source == "" {
		return ""
	}
	return c.Source + ": "
}

// String describes the config without its secrets, for logs.
func (c *Config) String() string {
	parts := []string{"security.protocol=" + c.SecurityProtocol}
	if c.SASL() {
		parts = append(parts, "sasl.mechanism="+c.SASLMechanism, "sasl.username="+c.Username, "sasl.password="+redactedIfSet(c.Password))
	}
	if c.CALocation != "" {
		parts = append(parts, "ssl.ca.location="+c.CALocation)
	}
	if c.CertLocation != "" {
		parts = append(parts, "ssl.certificate.location="+c.CertLocation)
	}
	return strings.Join(parts, " ")
}

// GoString keeps %#v from printing the secrets too.
func (c *Config) GoString() string { return "kafkaconfig.Config{" + c.String() + "}" }

func redactedIfSet(s string) string {
	if s == "" {
		return ""
	}
	return "[REDACTED]"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
