package kafkaconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/internal/testing/testpki"
)

// tlsSASLCluster is a kfake broker that takes only TLS connections that
// authenticate with SASL, as user "agent" for each mechanism.
func tlsSASLCluster(t *testing.T, p *testpki.PKI, srv testpki.Pair) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv.TLS}}), kfake.EnableSASL(),
		kfake.Superuser(MechScram512, "agent", "scram512-pass"),
		kfake.Superuser(MechScram256, "agent", "scram256-pass"),
		kfake.Superuser(MechPlain, "agent", "plain-pass"),
		kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func optsOf(t *testing.T, text string) []kgo.Opt {
	t.Helper()
	c, err := parse(t, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.Opts()
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// Each SASL mechanism of franz-go's pkg/sasl, over TLS verified against
// the file's CA: Check passes and a record goes through.
func TestEveryMechanismConnectsOverTLS(t *testing.T) {
	p := testpki.New(t)
	seeds := tlsSASLCluster(t, p, p.Server(t, "broker", []net.IP{net.ParseIP("127.0.0.1")}, nil))
	for mech, pass := range map[string]string{MechScram512: "scram512-pass", MechScram256: "scram256-pass", MechPlain: "plain-pass"} {
		opts := optsOf(t, fmt.Sprintf("security.protocol=SASL_SSL\nsasl.mechanism=%s\nsasl.username=agent\nsasl.password=%s\nssl.ca.location=%s", mech, pass, p.CAFile))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := Check(ctx, seeds, opts...); err != nil {
			t.Fatalf("%s: check: %v", mech, err)
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("t"))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(mech)}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", mech, err)
		}
		cl.Close()
		cancel()
	}
}

// kfake closes the connection on refused credentials, where Apache Kafka
// answers SASL_AUTHENTICATION_FAILED (asserted as ErrSASL against the real
// secure broker, harness/integration/secure): here Check must fail at once and
// never quote the password.
func TestCheckOfAWrongPasswordFailsAtOnce(t *testing.T) {
	p := testpki.New(t)
	seeds := tlsSASLCluster(t, p, p.Server(t, "broker", []net.IP{net.ParseIP("127.0.0.1")}, nil))
	opts := optsOf(t, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=agent\nsasl.password=wrong-pw\nssl.ca.location="+p.CAFile)
	start := time.Now()
	err := Check(context.Background(), seeds, opts...)
	if err == nil || strings.Contains(err.Error(), "wrong-pw") || time.Since(start) > CheckTimeout {
		t.Fatalf("error %v after %s", err, time.Since(start))
	}
}

func TestClassifyNamesTheKindOfFailure(t *testing.T) {
	cases := []struct {
		err  error
		want error
	}{
		{fmt.Errorf("auth: %w", kerr.SaslAuthenticationFailed), ErrSASL},
		{x509.UnknownAuthorityError{}, ErrTLS},
		{&tls.CertificateVerificationError{Err: errors.New("x")}, ErrTLS},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, ErrTLS},
		{io.EOF, ErrUnreachable},
	}
	for _, c := range cases {
		if got := Classify("b:1", c.err); !errors.Is(got, c.want) {
			t.Errorf("%v: classified %v, want %v", c.err, got, c.want)
		}
	}
}

func TestCheckReportsAnUntrustedBrokerAsTLS(t *testing.T) {
	p := testpki.New(t)
	seeds := tlsSASLCluster(t, p, p.Server(t, "broker", []net.IP{net.ParseIP("127.0.0.1")}, nil))
	opts := optsOf(t, "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=agent\nsasl.password=plain-pass\nssl.ca.location="+p.OtherCAFile)
	start := time.Now()
	err := Check(context.Background(), seeds, opts...)
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("error %v, want ErrTLS", err)
	}
	if d := time.Since(start); d > CheckTimeout {
		t.Fatalf("took %s: a TLS failure must not be retried", d)
	}
	t.Logf("measured: %v", err)
}

// The broker's certificate names only "localhost": dialing 127.0.0.1
// fails host name verification, unless the file says
// ssl.endpoint.identification.algorithm=none (the chain is still checked).
func TestEndpointIdentification(t *testing.T) {
	p := testpki.New(t)
	seeds := tlsSASLCluster(t, p, p.Server(t, "broker", nil, []string{"localhost"}))
	base := "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=agent\nsasl.password=plain-pass\n"
	err := Check(context.Background(), seeds, optsOf(t, base+"ssl.ca.location="+p.CAFile)...)
	if !errors.Is(err, ErrTLS) {
		t.Fatalf("host name mismatch: %v, want ErrTLS", err)
	}
	if err := Check(context.Background(), seeds, optsOf(t, base+"ssl.endpoint.identification.algorithm=none\nssl.ca.location="+p.CAFile)...); err != nil {
		t.Fatalf("with none: %v", err)
	}
	err = Check(context.Background(), seeds, optsOf(t, base+"ssl.endpoint.identification.algorithm=none\nssl.ca.location="+p.OtherCAFile)...)
	if !errors.Is(err, ErrTLS) {
		t.Fatalf("none still verifies the chain: %v", err)
	}
}

func TestCheckOfAPlaintextClientOnATLSListenerEndsInTime(t *testing.T) {
	p := testpki.New(t)
	seeds := tlsSASLCluster(t, p, p.Server(t, "broker", []net.IP{net.ParseIP("127.0.0.1")}, nil))
	start := time.Now()
	err := Check(context.Background(), seeds)
	if err == nil {
		t.Fatal("a plaintext client reached a TLS listener")
	}
	if d := time.Since(start); d > CheckTimeout+2*time.Second {
		t.Fatalf("took %s", d)
	}
	t.Logf("measured: %v", err)
}

func TestCheckOfNoBrokerIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = Check(context.Background(), []string{addr})
	if !errors.Is(err, ErrUnreachable) || Definite(err) {
		t.Fatalf("error %v, want ErrUnreachable", err)
	}
}

func TestOIDCTokenIsFetchedWithClientCredentialsAndCached(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != "svc" || secret != "sec" || r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "kafka" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-1", "expires_in": 3600})
	}))
	defer srv.Close()
	src := newTokenSource(OAuth{Method: "oidc", TokenEndpoint: srv.URL, ClientID: "svc", ClientSecret: "sec", Scope: "kafka", Extensions: map[string]string{"logicalCluster": "lc"}})
	for range 3 {
		a, err := src.auth(context.Background())
		if err != nil || a.Token != "tok-1" || a.Extensions["logicalCluster"] != "lc" {
			t.Fatalf("auth %+v %v", a, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d token requests, want 1 (cached)", calls.Load())
	}
	bad := newTokenSource(OAuth{Method: "oidc", TokenEndpoint: srv.URL, ClientID: "svc", ClientSecret: "wrong"})
	if _, err := bad.auth(context.Background()); !errors.Is(err, ErrSASL) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("refused token: %v", err)
	}
}

// Every mechanism builds: OAUTHBEARER and AWS_MSK_IAM cannot be run
// against kfake or the test broker, but their options must construct.
func TestAllMechanismsBuild(t *testing.T) {
	for _, text := range []string{
		"security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.oauthbearer.method=oidc\nsasl.oauthbearer.client.id=a\nsasl.oauthbearer.client.secret=b\nsasl.oauthbearer.token.endpoint.url=https://idp/token",
		"security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\nsasl.username=AKIA\nsasl.password=secret\nsasl.aws.session.token=tok",
	} {
		if opts := optsOf(t, text); len(opts) != 2 {
			t.Fatalf("%q: %d options, want TLS and SASL", text, len(opts))
		}
	}
}

// SSL with a client certificate (mTLS): the broker admits only clients
// its CA signed.
func TestClientCertificateOverSSL(t *testing.T) {
	p := testpki.New(t)
	srv := p.Loopback(t, "broker")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv.TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.Pool}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := p.Client(t, "executor")
	good := optsOf(t, "security.protocol=SSL\nssl.ca.location="+p.CAFile+"\nssl.certificate.location="+cli.CertFile+"\nssl.key.location="+cli.KeyFile)
	if err := Check(context.Background(), c.ListenAddrs(), good...); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	err = Check(context.Background(), c.ListenAddrs(), optsOf(t, "security.protocol=SSL\nssl.ca.location="+p.CAFile)...)
	if err == nil {
		t.Fatal("without a client certificate the broker must refuse")
	}
	t.Logf("measured: no client certificate: %v", err)
}
