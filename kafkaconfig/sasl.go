package kafkaconfig

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Opts builds the kgo options of the config: a TLS dialer when the
// protocol uses TLS, a SASL mechanism when it uses SASL. It reads the
// certificate files now, so a missing one is an error at start.
func (c *Config) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if c.TLS() {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if c.SASL() {
		m, err := c.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func (c *Config) mechanism() (sasl.Mechanism, error) {
	switch c.SASLMechanism {
	case MechPlain:
		return plain.Auth{User: c.Username, Pass: c.Password}.AsMechanism(), nil
	case MechScram256:
		return scram.Auth{User: c.Username, Pass: c.Password}.AsSha256Mechanism(), nil
	case MechScram512:
		return scram.Auth{User: c.Username, Pass: c.Password}.AsSha512Mechanism(), nil
	case MechOAuthBearer:
		src := newTokenSource(c.OAuth)
		return oauth.Oauth(src.auth), nil
	case MechAWSMSKIAM:
		a := aws.Auth{AccessKey: c.Username, SecretKey: c.Password, SessionToken: c.AWSSessionToken, UserAgent: "toolexec"}
		return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) { return a, nil }), nil
	}
	return nil, c.errf("sasl.mechanism", "%q is not supported", c.SASLMechanism)
}
