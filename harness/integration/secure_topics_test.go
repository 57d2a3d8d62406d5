package integration

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/topics"
)

// TestSecureTopicsRoleCreatesAndChecksTheTopics: the topics Job of
// deploy/k8s runs `executor topics` as the topics role of
// deploy/kafka/acls, not as the admin super user. On the secured broker,
// as that role, it creates a set of topics under a fresh prefix inside
// the granted one and checks them (settings, durability), and it may not
// read or write a record.
func TestSecureTopicsRoleCreatesAndChecksTheTopics(t *testing.T) {
	w := newSecureWorld(t)
	prefix := topics.DefaultPrefix + "job" + randHex(4) + "."
	out, err := exec.Command(binary, "topics", "--kafka-config", w.file("topics"), "--topic-prefix", prefix,
		"--partitions", "3", "--timeout", "2m").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ready") {
		t.Fatalf("executor topics as the topics role: %v\n%s", err, out)
	}
	t.Logf("measured: %s", strings.TrimSpace(string(out)))
	names := topics.NamesWithPrefix(prefix)
	td, err := w.e.adm.ListTopics(t.Context(), append(names.All(), names.Meta)...)
	if err != nil || len(td) != len(names.All())+1 {
		t.Fatalf("the topics under %s: %d listed (%v), want %d", prefix, len(td), err, len(names.All())+1)
	}
	// The producer is idempotent: the broker refuses it the cluster's
	// IdempotentWrite before it looks at the topic.
	if err := w.produceAs("topics", names.Intents); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("the topics role produced to %s: %v, want an authorization failure", names.Intents, err)
	}
	if err := w.readAs("topics", names.Events); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("the topics role read %s: %v, want TOPIC_AUTHORIZATION_FAILED", names.Events, err)
	}
}
