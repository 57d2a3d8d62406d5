package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/testing/testpki"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/wire"
)

// TestSecureRolesOnASecuredBroker runs the product on the secure broker,
// each part under its own least-privilege role (deploy/kafka/acls): the
// executor (the binary, --kafka-config executor.properties), the
// reconciler (reconciler.properties), an agent (client.Config.KafkaConfig
// = agent.properties) and an operator (operator.properties). The tools
// want a bearer token and a client certificate. It checks a call, a
// replay, a conflict, a key in doubt settled by the reconciler's retry,
// one settled by its probe, an operator's resolve; that the broker refuses
// the agent's writes to control, events and results and its read of the
// event log; that a wrong CA and a wrong password fail at start with
// ErrTLS and ErrSASL; and, at the end, that the tools' token is nowhere:
// not in any topic, data dir, process log, history or metrics.
func TestSecureRolesOnASecuredBroker(t *testing.T) {
	w := newSecureWorld(t)
	p := testpki.New(t)
	token := "sec-token-" + randHex(12)
	t.Setenv("SEC_TOOL_TOKEN", token) // the in-process reconciler's tools read it too
	tool := newCredTool(t, p, token)
	toolsYAML := tool.toolsYAML(p, p.Client(t, "executor"))
	exDir := t.TempDir()
	ex := w.startExecutor("executor", w.file("executor"), "tool.", "tool-executor", toolsYAML, exDir)
	recLog := &bufLogger{}
	recDir := t.TempDir()
	w.e.startReconciler(registry(t, toolsYAML), recDir, func(c *reconciler.Config) {
		c.Brokers, c.Group, c.ClientOpts, c.Logger = w.seeds, "tool-reconciler", w.opts("reconciler"), recLog.logger()
	})
	agent := w.agent()
	tenant := "sec" + randHex(3)
	call := func(tool, key string, args map[string]any) wire.Intent {
		return wire.Intent{Tenant: tenant, Key: key, Tool: tool, Args: args}
	}

	t.Run("call, replay and conflict as the agent", func(t *testing.T) {
		first := w.e.call(agent, call("sec.echo", "order-1", map[string]any{"amount": 120}), 60*time.Second)
		replay := w.e.call(agent, call("sec.echo", "order-1", map[string]any{"amount": 120.0}), 30*time.Second)
		conflict := w.e.call(agent, call("sec.echo", "order-1", map[string]any{"amount": 121}), 30*time.Second)
		if first.Status != codes.StatusSucceeded || first.WasReplay || replay.Status != codes.StatusSucceeded || !replay.WasReplay || conflict.Status != codes.StatusConflict {
			t.Fatalf("first %+v\nreplay %+v\nconflict %+v", first, replay, conflict)
		}
	})

	t.Run("a key in doubt is settled by the reconciler's retry", func(t *testing.T) {
		w.e.callPending(agent, call("sec.flaky", "refund-1", map[string]any{"amount": 5}), 4*time.Second)
		res := w.e.call(agent, call("sec.flaky", "refund-1", map[string]any{"amount": 5}), 60*time.Second)
		if res.Status != codes.StatusSucceeded {
			t.Fatalf("after the reconciler: %+v", res)
		}
	})

	t.Run("a key in doubt is settled by the reconciler's probe", func(t *testing.T) {
		w.e.callPending(agent, call("sec.release", "deploy-1", map[string]any{"v": 2}), 4*time.Second)
		res := w.e.call(agent, call("sec.release", "deploy-1", map[string]any{"v": 2}), 60*time.Second)
		if res.Status != codes.StatusSucceeded || tool.probes() == 0 {
			t.Fatalf("after the probe (%d probes): %+v", tool.probes(), res)
		}
	})

	t.Run("an operator resolves an escalated key", func(t *testing.T) {
		w.e.callPending(agent, call("sec.page", "page-1", map[string]any{"to": "oncall"}), 4*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := reconciler.Resolve(ctx, reconciler.ResolveRequest{Brokers: w.seeds, Names: w.e.names, Tenant: tenant, Key: "page-1",
			Outcome: "succeeded", Result: map[string]any{"paged": true}, By: "operator-test", Reason: "the pager log shows it", ClientOpts: w.opts("operator"),
			Force: true}) // within the tool's pending_ttl: the operator forces it
		if err != nil || res.Status != codes.StatusResolved {
			t.Fatalf("resolve as the operator: %+v %v", res, err)
		}
		rows, err := reconciler.PendingFromLog(ctx, reconciler.LogOptions{Brokers: w.seeds, Names: w.e.names, ClientOpts: w.opts("operator")})
		if err != nil {
			t.Fatalf("pending as the operator: %v", err)
		}
		for _, r := range rows {
			if r.Tenant == tenant {
				t.Errorf("still in doubt after the resolve: %+v", r)
			}
		}
	})

	t.Run("the broker refuses the agent what its role does not grant", func(t *testing.T) {
		for _, topic := range []string{w.e.names.Control, w.e.names.Events, w.e.names.Results} {
			err := w.produceAs("agent", topic)
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Errorf("agent produce to %s: %v, want TOPIC_AUTHORIZATION_FAILED", topic, err)
			}
			t.Logf("measured: agent produce to %s: %v", topic, err)
		}
		err := w.readAs("agent", w.e.names.Events)
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("agent read of %s: %v, want TOPIC_AUTHORIZATION_FAILED", w.e.names.Events, err)
		}
		t.Logf("measured: agent read of %s: %v", w.e.names.Events, err)
		if err := w.produceAs("agent", w.e.names.Intents); err != nil {
			t.Errorf("agent produce to intents (its grant): %v", err)
		}
	})

	t.Run("the same files work with kcat", func(t *testing.T) { w.kcatChecks(t) })

	t.Run("a wrong CA or password ends the start with a clear error", func(t *testing.T) {
		ctx := context.Background()
		bad := w.variant("agent", "ssl.ca.location", p.OtherCAFile)
		err := kafkaconfig.Check(ctx, w.seeds, w.optsOf(bad)...)
		if !errors.Is(err, kafkaconfig.ErrTLS) {
			t.Errorf("wrong CA: %v, want ErrTLS", err)
		}
		t.Logf("measured: wrong CA: %v", err)
		err = kafkaconfig.Check(ctx, w.seeds, w.optsOf(w.variant("agent", "sasl.password", "not-the-password"))...)
		if !errors.Is(err, kafkaconfig.ErrSASL) {
			t.Errorf("wrong password: %v, want ErrSASL", err)
		}
		t.Logf("measured: wrong password: %v", err)
		start := time.Now()
		out, err := exec.Command(binary, "--kafka-config", bad, "--data-dir", t.TempDir(), "--tools", writeTools(t, toolsYAML),
			"--http-addr", freeAddr(t), "--reconciler=false", "--gateway=false").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "kafka: TLS") || time.Since(start) > 2*kafkaconfig.CheckTimeout {
			t.Errorf("executor with the wrong CA: exit %v after %s:\n%s", err, time.Since(start), out)
		}
		t.Logf("measured: executor with the wrong CA exits after %s: %s", time.Since(start).Round(time.Millisecond), lastLine(out))
	})

	t.Run("the executor may repair hanging transactions and sees every partition", func(t *testing.T) {
		if v := scrapedValue(t, ex.http, "toolexec_executor_hanging_repair_authorized"); v != 1 {
			t.Errorf("hanging_repair_authorized = %v, want 1 (the executor role holds ClusterAction)", v)
		}
		if v := scrapedValue(t, ex.http, "toolexec_executor_hanging_check_unreadable_partitions"); v != 0 {
			t.Errorf("hanging_check_unreadable_partitions = %v, want 0 (Read on its topics and __consumer_offsets)", v)
		}
	})

	t.Run("history as the operator", func(t *testing.T) {
		out, err := exec.Command(binary, "history", "--kafka-config", w.file("operator"), "--tenant", tenant, "--key", "refund-1").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"by": "reconciler"`) {
			t.Fatalf("history: %v\n%s", err, out)
		}
		w.scanned = append(w.scanned, scanned{"executor history output", out})
	})

	ex.signal(os.Interrupt)
	ex.exited(t, 30*time.Second)
	t.Run("the token is nowhere", func(t *testing.T) {
		w.scanned = append(w.scanned, scanned{"executor process log", []byte(ex.output())}, scanned{"reconciler log", []byte(recLog.String())})
		w.scanForSecret(t, token, exDir, recDir)
	})
}

// startExecutor runs the executor binary with --kafka-config and no
// --brokers: the seeds come from the file's bootstrap.servers.
func (w *secureWorld) startExecutor(name, kafkaConfig, prefix, group, toolsYAML, dataDir string) *proc {
	w.t.Helper()
	addr := freeAddr(w.t)
	cmd := exec.Command(binary, "--kafka-config", kafkaConfig, "--data-dir", dataDir, "--tools", writeTools(w.t, toolsYAML),
		"--http-addr", addr, "--topic-prefix", prefix, "--group", group, "--partitions", strconv.Itoa(securePartitions),
		"--session-timeout", "3s", "--rebalance-timeout", "12s", "--drain-timeout", "8s", "--transaction-timeout", "10s",
		"--client-id", name, "--reconciler=false", "--gateway=false")
	cmd.Env = os.Environ()
	return w.e.launch(name, "executor", cmd, addr)
}

func (w *secureWorld) agent() *client.Client {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, client.Config{KafkaConfig: w.file("agent")})
	if err != nil {
		w.t.Fatalf("agent client: %v", err)
	}
	w.t.Cleanup(c.Close)
	return c
}

func (w *secureWorld) optsOf(file string) []kgo.Opt {
	w.t.Helper()
	c, err := kafkaconfig.Load(file)
	if err != nil {
		w.t.Fatal(err)
	}
	opts, err := c.Opts()
	if err != nil {
		w.t.Fatal(err)
	}
	return opts
}

// produceAs produces one record to partition 0 of topic as role.
func (w *secureWorld) produceAs(role, topic string) error {
	cl, err := kgo.NewClient(append(w.opts(role), kgo.SeedBrokers(w.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(2), kgo.RequestRetries(2))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A record no executor will act on: a key of no tenant's format.
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("sec-probe/" + randHex(4)), Value: []byte("refusal probe")}).FirstErr()
}

// readAs fetches partition 0 of topic from the start as role and returns
// the first fetch error (nil if a record came back).
func (w *secureWorld) readAs(role, topic string) error {
	cl, err := kgo.NewClient(append(w.opts(role), kgo.SeedBrokers(w.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		if fs.NumRecords() > 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no record and no error in 20s: %w", ctx.Err())
		}
	}
}

// kcatChecks runs deploy/kafka/kcat (kcat with a librdkafka that can do
// SCRAM against Kafka 4) with the unchanged role files.
func (w *secureWorld) kcatChecks(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (deploy/kafka/start installs it)")
	}
	kcat := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command("../../deploy/kafka/kcat", args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := kcat("", "-F", w.file("agent"), "-L", "-t", w.e.names.Intents)
	if err != nil || !strings.Contains(out, `topic "`+w.e.names.Intents+`" with `+strconv.Itoa(securePartitions)+" partitions") {
		t.Fatalf("kcat -F agent.properties -L: %v\n%s", err, out)
	}
	out, err = kcat("", "-F", w.file("agent"), "-C", "-t", w.e.names.Events, "-o", "beginning", "-e", "-c", "1")
	if err == nil || !strings.Contains(out, "Topic authorization failed") {
		t.Errorf("kcat as the agent reading %s: %v\n%s", w.e.names.Events, err, out)
	}
	t.Logf("measured: kcat -F agent.properties -C -t %s: %s", w.e.names.Events, lastLine([]byte(out)))
	out, err = kcat("refusal probe\n", "-F", w.file("agent"), "-P", "-t", w.e.names.Control, "-p", "0")
	if err == nil && !strings.Contains(out, "authorization failed") {
		t.Errorf("kcat as the agent producing to %s succeeded:\n%s", w.e.names.Control, out)
	}
	t.Logf("measured: kcat -F agent.properties -P -t %s: exit %v: %s", w.e.names.Control, err, lastLine([]byte(out)))
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// scrapedValue reads one unlabelled sample from a /metrics page.
func scrapedValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("%s not on %s/metrics", name, addr)
	return 0
}

// scanned is a text the secret scan looks at, with where it came from.
type scanned struct {
	where string
	data  []byte
}

// scanForSecret looks for secret in every record (key, value, headers) of
// every topic of the world, every file under dirs, and w.scanned. It also
// requires what proves the scan sees what it should: the tool's echo,
// redacted, in the topics. Raw files are read as they are: Pebble's write-
// ahead log holds every batch uncompressed, so a secret written to the
// view is in it (the tests write far less than a memtable).
func (w *secureWorld) scanForSecret(t *testing.T, secret string, dirs ...string) {
	texts := append([]scanned{}, w.scanned...)
	texts = append(texts, w.topicRecords(t)...)
	for _, d := range dirs {
		texts = append(texts, filesUnder(t, d)...)
	}
	redactedSeen := 0
	for _, s := range texts {
		if bytes.Contains(s.data, []byte(secret)) {
			t.Errorf("the token is in %s", s.where)
		}
		if strings.HasPrefix(s.where, "topic ") && bytes.Contains(s.data, []byte("[REDACTED]")) {
			redactedSeen++
		}
	}
	if redactedSeen == 0 {
		t.Errorf("no redacted echo found in the topics: the scan did not see the tool's answers")
	}
	t.Logf("measured: scanned %d texts (topics, data dirs, logs, history); the token in none; redacted echoes in %d records", len(texts), redactedSeen)
}

func (w *secureWorld) topicRecords(t *testing.T) []scanned {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := w.e.names.All()
	ends, err := w.e.adm.ListEndOffsets(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{}
	parts := map[string]map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if want[o.Topic] == nil {
				want[o.Topic], parts[o.Topic] = map[int32]int64{}, map[int32]kgo.Offset{}
			}
			want[o.Topic][o.Partition], parts[o.Topic][o.Partition] = o.Offset, kgo.NewOffset().AtStart()
		}
	})
	cl, err := kgo.NewClient(append(w.opts("admin"), kgo.SeedBrokers(w.seeds...), kgo.ConsumePartitions(parts),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []scanned
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the topics: %v (left %v)", ctx.Err(), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			data := append(append([]byte{}, r.Key...), r.Value...)
			for _, h := range r.Headers {
				data = append(append(data, h.Key...), h.Value...)
			}
			out = append(out, scanned{fmt.Sprintf("topic %s/%d@%d", r.Topic, r.Partition, r.Offset), data})
			if r.Offset+1 >= want[r.Topic][r.Partition] {
				delete(want[r.Topic], r.Partition)
				if len(want[r.Topic]) == 0 {
					delete(want, r.Topic)
				}
			}
		})
	}
	return out
}

func filesUnder(t *testing.T, dir string) []scanned {
	var out []scanned
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, scanned{"file " + path, b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
