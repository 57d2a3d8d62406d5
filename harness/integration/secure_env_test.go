package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/internal/testing/testpki"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// The secured world: the broker of `deploy/kafka/start --secure` (SASL_SSL
// only, SCRAM-SHA-512, StandardAuthorizer, the ACLs of deploy/kafka/acls),
// found through KAFKA_SECURE_BROKERS and KAFKA_CLIENTS_DIR (scripts/test
// sets both). Its ACLs name the default topics (prefix tool.) and groups,
// so its tests share one set of topics and run one after the other, each
// with keys of its own.
type secureWorld struct {
	t       *testing.T
	seeds   []string
	clients string    // dir of <role>.properties
	e       *env      // names, admin client, process helpers
	scanned []scanned // texts the secret scan adds to the topics and files
}

const securePartitions = 3

func newSecureWorld(t *testing.T) *secureWorld {
	t.Helper()
	seeds, clients := os.Getenv("KAFKA_SECURE_BROKERS"), os.Getenv("KAFKA_CLIENTS_DIR")
	if testing.Short() || seeds == "" || clients == "" {
		t.Skip("needs the secure broker: eval \"$(deploy/kafka/start --secure)\" and KAFKA_SECURE_BROKERS=$KAFKA_BROKERS")
	}
	w := &secureWorld{t: t, seeds: strings.Split(seeds, ","), clients: clients}
	admin, err := kgo.NewClient(append(w.opts("admin"), kgo.SeedBrokers(w.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	w.e = &env{t: t, prefix: topics.DefaultPrefix, names: topics.NamesWithPrefix(topics.DefaultPrefix), group: "tool-executor",
		partitions: securePartitions, raw: admin, adm: kadm.NewClient(admin)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := topicadmin.Ensure(ctx, w.e.adm, w.e.names, topicadmin.Settings{Partitions: securePartitions, MinEventRetention: 48 * time.Hour}); err != nil {
		t.Fatalf("admin creates the topics: %v", err)
	}
	return w
}

// file is the client properties file of role.
func (w *secureWorld) file(role string) string { return filepath.Join(w.clients, role+".properties") }

// opts are the TLS and SASL options of role's file.
func (w *secureWorld) opts(role string) []kgo.Opt {
	w.t.Helper()
	c, err := kafkaconfig.Load(w.file(role))
	if err != nil {
		w.t.Fatal(err)
	}
	opts, err := c.Opts()
	if err != nil {
		w.t.Fatal(err)
	}
	return opts
}

// variant writes a copy of role's file with one property replaced.
func (w *secureWorld) variant(role, prop, value string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.file(role))
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prop+"=") {
			line = prop + "=" + value
		}
		out = append(out, line)
	}
	path := filepath.Join(w.t.TempDir(), role+"-variant.properties")
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// credTool is an HTTPS tool server that wants a client certificate of
// its CA and a bearer token. Like careless real servers it echoes the
// Authorization header it got into its answers, successes and errors
// alike: only redaction keeps the token out of the log.
type credTool struct {
	srv   *httptest.Server
	token string
	mu    sync.Mutex
	calls map[string]int // path + Idempotency-Key -> calls
	probe int            // probe GETs answered
}

func newCredTool(t *testing.T, p *testpki.PKI, token string) *credTool {
	ct := &credTool{token: token, calls: map[string]int{}}
	ct.srv = httptest.NewUnstartedServer(http.HandlerFunc(ct.serve))
	ct.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	ct.srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.Loopback(t, "tool").TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.Pool}
	ct.srv.StartTLS()
	t.Cleanup(ct.srv.Close)
	return ct
}

func (ct *credTool) serve(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+ct.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"bad token %s"}`, auth)
		return
	}
	if r.Method == http.MethodGet { // the probe of sec.release
		ct.mu.Lock()
		ct.probe++
		ct.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "succeeded", "result": map[string]any{"released": true, "auth_seen": auth}})
		return
	}
	ct.mu.Lock()
	ct.calls[r.URL.Path+" "+r.Header.Get("Idempotency-Key")]++
	n := ct.calls[r.URL.Path+" "+r.Header.Get("Idempotency-Key")]
	ct.mu.Unlock()
	switch {
	case r.URL.Path == "/page", r.URL.Path == "/release", r.URL.Path == "/flaky" && n == 1:
		w.WriteHeader(http.StatusServiceUnavailable) // the effect may have happened: in doubt
		fmt.Fprintf(w, `{"error":"upstream timeout","auth_seen":%q}`, auth)
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "call": n, "auth_seen": auth})
	}
}

func (ct *credTool) probes() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.probe
}

// toolsYAML is the tool file of the secured run: every tool carries the
// bearer token (as a reference) and the client certificate.
func (ct *credTool) toolsYAML(p *testpki.PKI, cli testpki.Pair) string {
	auth := fmt.Sprintf(`    headers: {Authorization: "Bearer ${env:SEC_TOOL_TOKEN}"}
    tls: {ca: %s, cert: %s, key: %s}
`, p.CAFile, cli.CertFile, cli.KeyFile)
	tool := func(name, class, path, extra string) string {
		return fmt.Sprintf("  - name: %s\n    class: %s\n    url: %s%s\n    timeout: 2s\n    pending_ttl: 5s\n    retries: 0\n%s%s", name, class, ct.srv.URL, path, extra, auth)
	}
	return "tools:\n" + tool("sec.echo", "native_key", "/echo", "") + tool("sec.flaky", "native_key", "/flaky", "") +
		tool("sec.page", "irreversible", "/page", "") +
		tool("sec.release", "probe", "/release", fmt.Sprintf("    probe_url: %s/release/status\n", ct.srv.URL))
}

// bufLogger is a slog.Logger into a buffer, for the secret scan.
type bufLogger struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *bufLogger) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *bufLogger) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *bufLogger) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
