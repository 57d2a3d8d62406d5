package tools

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/internal/testing/testpki"
)

const testToken = "tok-9f8e7d6c5b4a"

// mtlsServer requires a client certificate signed by p's CA and the bearer
// token; a wrong token is answered 401 with the header echoed back, as
// careless servers do.
func mtlsServer(t *testing.T, p *testpki.PKI) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"bad token","got":%q}`, got)
			return
		}
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "succeeded", "result": map[string]any{"seen": r.URL.Query().Get("key")}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "echo": r.Header.Get("Authorization"), "key": r.Header.Get("Idempotency-Key")})
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.Loopback(t, "tool").TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.Pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func credConfig(t *testing.T, srvURL, ca string, cli testpki.Pair, tokenRef string) string {
	return fmt.Sprintf(`tools:
  - name: pay.refund
    class: probe
    url: %[1]s/refund
    probe_url: %[1]s/refund/status
    headers:
      Authorization: "Bearer %[2]s"
      X-Api-Version: "2026-01"
    tls:
      ca: %[3]s
      cert: %[4]s
      key: %[5]s
`, srvURL, tokenRef, ca, cli.CertFile, cli.KeyFile)
}

// A tool server that wants both a bearer token and a client certificate
// serves calls and probes; the token never shows in what an outcome
// carries, even when the tool echoes it.
func TestBearerAndClientCertificateReachTheToolAndItsProbe(t *testing.T) {
	p := testpki.New(t)
	srv := mtlsServer(t, p)
	t.Setenv("PAY_TOKEN", testToken)
	reg := mustRegistry(t, credConfig(t, srv.URL, p.CAFile, p.Client(t, "executor"), "${env:PAY_TOKEN}"))
	_, tool, _ := reg.Lookup("pay.refund")
	h := tool.(*HTTP)
	ctx := context.Background()
	out := h.Invoke(ctx, Request{DownstreamKey: "k-1", Args: map[string]any{"amount": 5}, Tenant: "t", Key: "k"})
	if out.Status != Succeeded {
		t.Fatalf("call: %+v", out)
	}
	res := out.Result.(map[string]any)
	if res["key"] != "k-1" || res["echo"] != secretRedacted || strings.Contains(fmt.Sprint(out), testToken) {
		t.Fatalf("result %v: the echoed token must be redacted", res)
	}
	if pr := h.Probe(ctx, "k-1"); pr.Status != Succeeded {
		t.Fatalf("probe: %+v", pr)
	}
}

const secretRedacted = "[REDACTED]"

func mustRegistry(t *testing.T, yaml string) *Registry {
	t.Helper()
	cfg, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := FromConfig(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestAWrongTokenIsAFailureWhoseMessageHidesTheToken(t *testing.T) {
	p := testpki.New(t)
	srv := mtlsServer(t, p)
	wrong := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(wrong, []byte("wrong-secret-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := mustRegistry(t, credConfig(t, srv.URL, p.CAFile, p.Client(t, "executor"), "${file:"+wrong+"}"))
	_, tool, _ := reg.Lookup("pay.refund")
	out := tool.(*HTTP).Invoke(context.Background(), Request{DownstreamKey: "k-2", Args: map[string]any{}})
	if out.Status != Failed || out.Code != "http_401" {
		t.Fatalf("outcome %+v, want failed http_401", out)
	}
	if strings.Contains(out.Message, "wrong-secret-123") || !strings.Contains(out.Message, secretRedacted) {
		t.Fatalf("message %q must show the echo redacted", out.Message)
	}
}

func TestWithoutTheClientCertificateTheToolIsNotReached(t *testing.T) {
	p := testpki.New(t)
	srv := mtlsServer(t, p)
	t.Setenv("PAY_TOKEN", testToken)
	yaml := fmt.Sprintf("tools:\n  - name: pay.refund\n    class: native_key\n    url: %s/refund\n    headers: {Authorization: \"Bearer ${env:PAY_TOKEN}\"}\n    tls: {ca: %s}\n", srv.URL, p.CAFile)
	_, tool, _ := mustRegistry(t, yaml).Lookup("pay.refund")
	h := tool.(*HTTP)
	h.sleep = func(context.Context, time.Duration) error { return nil }
	out := h.Invoke(context.Background(), Request{DownstreamKey: "k-3", Args: map[string]any{}})
	if out.Status == Succeeded || strings.Contains(out.Message, testToken) {
		t.Fatalf("outcome %+v: the server requires a client certificate", out)
	}
}

// A missing variable or file stops the start with an error naming the
// tool and the field, never a secret.
func TestMissingCredentialsNameTheToolAndTheField(t *testing.T) {
	p := testpki.New(t)
	cli := p.Client(t, "executor")
	cases := []struct{ name, yaml, want string }{
		{"variable", credConfig(t, "https://127.0.0.1:1", p.CAFile, cli, "${env:TOOLEXEC_TEST_UNSET}"),
			"tools[0] (pay.refund): headers.Authorization: secret reference: ${env:TOOLEXEC_TEST_UNSET}: the environment variable TOOLEXEC_TEST_UNSET is not set"},
		{"token file", credConfig(t, "https://127.0.0.1:1", p.CAFile, cli, "${file:/nonexistent/token}"),
			"tools[0] (pay.refund): headers.Authorization: secret reference: ${file:/nonexistent/token}"},
		{"ca file", credConfig(t, "https://127.0.0.1:1", "/nonexistent/ca.pem", cli, "x"),
			"tools[0] (pay.refund): tls.ca: open /nonexistent/ca.pem"},
	}
	for _, c := range cases {
		cfg, err := Parse([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%s: parse: %v", c.name, err)
		}
		_, err = FromConfig(cfg, nil, nil)
		var fe *FieldError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCredentialFieldsAreValidated(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"tools:\n  - {name: a, class: native_key, url: 'http://x', headers: {Idempotency-Key: k}}", "headers.Idempotency-Key: set by the adapter itself"},
		{"tools:\n  - {name: a, class: native_key, url: 'http://x', headers: {'bad name': k}}", "is not a valid header name"},
		{"tools:\n  - {name: a, class: native_key, url: 'http://x', tls: {ca: /ca.pem}}", "tls: set, but url is not https"},
		{"tools:\n  - {name: a, class: native_key, url: 'https://x', tls: {cert: /c.pem}}", "needs both cert and key"},
		{"tools:\n  - {name: a, class: native_key, url: 'https://x', tls: {pem: /c.pem}}", "unknown field"},
		{"tools:\n  - {name: a, class: native_key, url: 'https://x', headers: [a]}", "must be a mapping"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}
