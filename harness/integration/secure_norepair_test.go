package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/internal/aclfile"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// An executor whose principal lacks ClusterAction, and Read on
// __consumer_offsets, does not fail silently: it says so at start
// (hanging_repair_authorized 0, a warning naming ClusterAction) and its
// hanging-transaction check reports the partitions it cannot look at
// (hanging_check_unreadable_partitions > 0); the alert rules
// ToolexecExecutorCannotRepairHangingTransactions and
// ToolexecHangingCheckBlind fire on those (deploy/prometheus). It runs on
// topics and a group of its own, so it never competes with the executor
// of TestSecureRolesOnASecuredBroker.
func TestSecureExecutorWithoutClusterActionSaysSo(t *testing.T) {
	w := newSecureWorld(t)
	const user, prefix, group = "executor-norepair", "tool.norepair.", "tool-executor-norepair"
	password := randHex(16)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := w.e.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password}}); err != nil {
		t.Fatalf("admin creates %s: %v", user, err)
	}
	acls := fmt.Sprintf(`%[1]s topic prefixed %[2]s Read,Write,Describe,DescribeConfigs
%[1]s group literal %[3]s Read
%[1]s transactional-id prefixed %[3]s Write,Describe
`, user, prefix, group)
	grants, err := aclfile.Parse([]byte(acls), "norepair", nil)
	if err != nil {
		t.Fatal(err)
	}
	createGrants(t, w, grants)
	if _, err := topicadmin.Ensure(ctx, w.e.adm, topics.NamesWithPrefix(prefix), topicadmin.Settings{Partitions: 1, MinEventRetention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	file := w.variant("executor", "sasl.username", user)
	file = rewrite(t, file, "sasl.password", password)

	ex := w.startExecutor("norepair", file, prefix, group, "tools:\n  - {name: n.echo, class: native_key, url: 'http://127.0.0.1:1/'}\n", t.TempDir())
	if v := scrapedValue(t, ex.http, "toolexec_executor_hanging_repair_authorized"); v != 0 {
		t.Errorf("hanging_repair_authorized = %v, want 0", v)
	}
	if !strings.Contains(ex.output(), "lacks ClusterAction") {
		t.Errorf("no start-up warning about ClusterAction in:\n%s", ex.output())
	}
	deadline := time.Now().Add(30 * time.Second)
	for scrapedValue(t, ex.http, "toolexec_executor_hanging_check_unreadable_partitions") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("hanging_check_unreadable_partitions stayed 0 for 30s without Read on __consumer_offsets")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("measured: without ClusterAction and __consumer_offsets Read: hanging_repair_authorized 0, hanging_check_unreadable_partitions %v",
		scrapedValue(t, ex.http, "toolexec_executor_hanging_check_unreadable_partitions"))
}

func createGrants(t *testing.T, w *secureWorld, gs []aclfile.Grant) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, g := range gs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = g.Resource, g.Name, g.Pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = g.Principal(), "*", g.Operation, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, w.e.raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("create ACL: %v", err)
		}
	}
}

// rewrite replaces one property of a properties file in place.
func rewrite(t *testing.T, path, prop, value string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prop+"=") {
			lines[i] = prop + "=" + value
		}
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
