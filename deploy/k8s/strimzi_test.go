package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/atmostonce/toolexec/internal/aclfile"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

const (
	aclsFile       = "../kafka/acls"
	strimziDir     = "components/strimzi"
	strimziUsers   = "components/strimzi/kafkausers.yaml"
	strimziCluster = "my-cluster"
)

const usersHeader = `# Generated from deploy/kafka/acls by
#   go test ./deploy/k8s -run TestStrimziUsers -update
# Do not edit: go test ./deploy/k8s fails when the two differ. One
# KafkaUser per role (SCRAM-SHA-512) with the role's grants; admin is a
# super user of the cluster and needs none, and topics (the topics Job's
# role) is not needed: the KafkaTopics make the topics.
`

// strimziOps are Strimzi's names of Kafka's ACL operations.
var strimziOps = map[kmsg.ACLOperation]string{
	kmsg.ACLOperationRead: "Read", kmsg.ACLOperationWrite: "Write", kmsg.ACLOperationCreate: "Create",
	kmsg.ACLOperationDelete: "Delete", kmsg.ACLOperationAlter: "Alter", kmsg.ACLOperationDescribe: "Describe",
	kmsg.ACLOperationClusterAction: "ClusterAction", kmsg.ACLOperationDescribeConfigs: "DescribeConfigs",
	kmsg.ACLOperationAlterConfigs: "AlterConfigs", kmsg.ACLOperationIdempotentWrite: "IdempotentWrite",
}

var strimziResources = map[kmsg.ACLResourceType]string{
	kmsg.ACLResourceTypeTopic: "topic", kmsg.ACLResourceTypeGroup: "group",
	kmsg.ACLResourceTypeTransactionalId: "transactionalId", kmsg.ACLResourceTypeCluster: "cluster",
}

// usersFromACLs turns deploy/kafka/acls into KafkaUsers: one per role but
// the topics Job's, one ACL per line of the file (its operations
// together), in file order.
func usersFromACLs(t *testing.T) []*kafkaUser {
	t.Helper()
	grants, err := aclfile.Load(aclsFile, aclfile.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	var users []*kafkaUser
	byRole := map[string]*kafkaUser{}
	for _, g := range grants {
		if g.Role == "topics" {
			continue
		}
		u := byRole[g.Role]
		if u == nil {
			u = &kafkaUser{TypeMeta: metav1.TypeMeta{APIVersion: "kafka.strimzi.io/v1", Kind: "KafkaUser"},
				ObjectMeta: metav1.ObjectMeta{Name: g.Role, Labels: map[string]string{labelName: "toolexec-" + g.Role, labelComponent: "kafka-user"}}}
			u.Spec.Authentication.Type = "scram-sha-512"
			u.Spec.Authorization.Type = "simple"
			byRole[g.Role] = u
			users = append(users, u)
		}
		var acl kafkaACL
		acl.Resource.Type = strimziResources[g.Resource]
		if g.Resource != kmsg.ACLResourceTypeCluster {
			acl.Resource.Name = g.Name
			acl.Resource.PatternType = map[kmsg.ACLResourcePatternType]string{kmsg.ACLResourcePatternTypeLiteral: "literal", kmsg.ACLResourcePatternTypePrefixed: "prefix"}[g.Pattern]
		}
		acl.Host = "*"
		acls := u.Spec.Authorization.ACLs
		if n := len(acls); n > 0 && acls[n-1].Resource == acl.Resource {
			acls[n-1].Operations = append(acls[n-1].Operations, strimziOps[g.Operation])
			continue
		}
		acl.Operations = []string{strimziOps[g.Operation]}
		u.Spec.Authorization.ACLs = append(acls, acl)
	}
	return users
}

// TestStrimziUsersAreGeneratedFromTheACLs keeps components/strimzi's
// KafkaUsers equal to deploy/kafka/acls (which the secured suite applies
// to a real broker).
func TestStrimziUsersAreGeneratedFromTheACLs(t *testing.T) {
	want := usersFromACLs(t)
	if *update {
		var docs []string
		for _, u := range want {
			b, err := yaml.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
		if err := os.WriteFile(strimziUsers, []byte(usersHeader+strings.Join(docs, "---\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := decodeAll(t, strimziUsers, readFile(t, strimziUsers)).kafkaUsers
	if len(got) != len(want) {
		t.Fatalf("%s: %d users, the ACL file %d roles: run go test ./deploy/k8s -run TestStrimziUsers -update", strimziUsers, len(got), len(want))
	}
	for _, u := range want {
		if g := got[u.Name]; g == nil || !reflect.DeepEqual(g.Spec, u.Spec) {
			t.Errorf("%s: user %s differs from %s: run go test ./deploy/k8s -run TestStrimziUsers -update", strimziUsers, u.Name, aclsFile)
		}
	}
}

// With components/strimzi (overlays/strimzi) the KafkaTopics make the
// topics the executor expects (no Job, no credential of the topics role),
// the KafkaUsers the roles, each pod reads its role's password from the
// User Operator's Secret, and no Kafka credential comes from elsewhere.
func TestStrimziComponent(t *testing.T) {
	o := render(t, "overlays/strimzi")
	if len(o.jobs) != 0 || o.serviceAccounts["toolexec-topics"] != nil {
		t.Error("the topics Job and its ServiceAccount must go: the KafkaTopics make the topics")
	}
	for _, es := range o.externalSecrets {
		if strings.HasSuffix(es.Spec.Target.Name, "-kafka") || strings.HasSuffix(es.Spec.Target.Name, "-kafka-ca") {
			t.Errorf("ExternalSecret %s: Kafka credentials are Strimzi's", es.Name)
		}
	}
	for _, m := range o.all {
		if (m.kind == "KafkaTopic" || m.kind == "KafkaUser") && m.GetLabels()["strimzi.io/cluster"] != strimziCluster {
			t.Errorf("%s: no strimzi.io/cluster label", m)
		}
	}
	ex := invoked(t, o.statefulSets["tool-executor"].Spec.Template.Spec.Containers[0])
	checkKafkaTopics(t, o, ex)
	for n, ss := range o.statefulSets {
		files := mountedFilesOf(ss.Spec.Template.Spec)
		role := strings.TrimSuffix(filepath.Base(invoked(t, ss.Spec.Template.Spec.Containers[0]).flags["kafka-config"]), ".properties")
		if o.kafkaUsers[role] == nil || files["password"] != role || files["ca.crt"] != strimziCluster+"-cluster-ca-cert" {
			t.Errorf("%s: Kafka credentials %v, want the password of KafkaUser %s and the cluster CA", n, files, role)
		}
	}
}

// mountedFilesOf maps the files of the kafka-credentials volume to their
// Secrets.
func mountedFilesOf(pod corev1.PodSpec) map[string]string {
	out := map[string]string{}
	for _, s := range volume(pod, "kafka-credentials").Projected.Sources {
		for _, it := range s.Secret.Items {
			out[it.Path] = s.Secret.Name
		}
	}
	return out
}

func checkKafkaTopics(t *testing.T, o *objects, ex invocation) {
	t.Helper()
	n := topics.NamesWithPrefix(ex.flags["topic-prefix"])
	byTopic := map[string]*kafkaTopic{}
	for _, kt := range o.kafkaTopics {
		byTopic[kt.Spec.TopicName] = kt
	}
	partitions, _ := strconv.Atoi(ex.flags["partitions"])
	for _, name := range append(n.All(), n.Meta) {
		kt := byTopic[name]
		if kt == nil {
			t.Errorf("no KafkaTopic for %s", name)
			continue
		}
		want := int32(partitions)
		if name == n.Meta {
			want = 1
		}
		if kt.Spec.Partitions != want || kt.Spec.Replicas != 3 || fmt.Sprint(kt.Spec.Config["min.insync.replicas"]) != "2" {
			t.Errorf("%s: %d partitions (want %d), replicas %d (want 3), min.insync.replicas %v (want 2)", name, kt.Spec.Partitions, want, kt.Spec.Replicas, kt.Spec.Config["min.insync.replicas"])
		}
	}
	if c := byTopic[n.Meta]; c != nil && c.Spec.Config["cleanup.policy"] != "compact" {
		t.Errorf("%s must be compacted", n.Meta)
	}
	ev := byTopic[n.Events]
	if ev == nil {
		return
	}
	retention := time.Duration(toInt64(ev.Spec.Config["retention.ms"])) * time.Millisecond
	if need := eventRetentionNeeded(t, o, ex); ev.Spec.Config["cleanup.policy"] != "delete" || retention < need {
		t.Errorf("%s: cleanup.policy %v, retention %s: want delete and at least %s (the tools' retention plus pending_ttl, plus a day, at least a week)", n.Events, ev.Spec.Config["cleanup.policy"], retention, need)
	}
}

// eventRetentionNeeded is what `executor topics` gives the event log: at
// least a week, and a day more than the tools' longest retention plus
// pending_ttl (package topicadmin).
func eventRetentionNeeded(t *testing.T, o *objects, ex invocation) time.Duration {
	t.Helper()
	var cm string
	for _, v := range o.statefulSets["tool-executor"].Spec.Template.Spec.Volumes {
		if v.Name == "tools" {
			cm = v.ConfigMap.Name
		}
	}
	cfg, err := tools.Parse([]byte(o.configMaps[cm].Data[filepath.Base(ex.flags["tools"])]))
	if err != nil {
		t.Fatal(err)
	}
	var d time.Duration
	for _, s := range cfg.Tools {
		d = max(d, s.Retention+s.PendingTTL)
	}
	return max(7*24*time.Hour, d+24*time.Hour)
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
