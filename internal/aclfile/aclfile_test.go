package aclfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The shipped file parses, and its grants are the least-privilege table of
// docs/SECURITY.md: the agent may write intents and read answers only, and
// the topics role (the topics Job) may create and describe, never read,
// write or join a group.
func TestShippedFileGivesTheAgentIntentsAndAnswersOnly(t *testing.T) {
	gs, err := Load("../../deploy/kafka/acls", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Roles(gs), ","); got != "agent,executor,gateway,operator,reconciler,topics" {
		t.Fatalf("roles %s", got)
	}
	var agent []string
	for _, g := range gs {
		if g.Role == "agent" {
			agent = append(agent, g.String())
		}
		if g.Role == "topics" && (g.Resource == kmsg.ACLResourceTypeGroup || g.Resource == kmsg.ACLResourceTypeTransactionalId ||
			(g.Operation != kmsg.ACLOperationCreate && g.Operation != kmsg.ACLOperationDescribe && g.Operation != kmsg.ACLOperationDescribeConfigs)) {
			t.Errorf("the topics role may create and describe only: %s", g)
		}
		// Reading the brokers' settings (the durability check at start)
		// is the one cluster grant another role may hold.
		if g.Role != "executor" && g.Resource == kmsg.ACLResourceTypeCluster && g.Operation != kmsg.ACLOperationDescribeConfigs {
			t.Errorf("only the executor may hold a cluster grant other than DescribeConfigs: %s", g)
		}
	}
	want := []string{
		"User:agent WRITE TOPIC:literal:tool.intents", "User:agent DESCRIBE TOPIC:literal:tool.intents",
		"User:agent READ TOPIC:literal:tool.results", "User:agent DESCRIBE TOPIC:literal:tool.results",
		"User:agent READ TOPIC:prefixed:tool.reply.", "User:agent DESCRIBE TOPIC:prefixed:tool.reply.",
	}
	if strings.Join(agent, "\n") != strings.Join(want, "\n") {
		t.Fatalf("agent grants:\n%s\nwant:\n%s", strings.Join(agent, "\n"), strings.Join(want, "\n"))
	}
}

func TestVariablesAndErrors(t *testing.T) {
	gs, err := Parse([]byte("executor topic prefixed ${PREFIX} Read\n"), "f", map[string]string{"PREFIX": "prod."})
	if err != nil || len(gs) != 1 || gs[0].Name != "prod." {
		t.Fatalf("%v %v", gs, err)
	}
	for _, bad := range []string{
		"agent topic literal x",
		"agent table literal x Read",
		"agent topic exact x Read",
		"agent topic literal ${NOPE} Read",
		"agent topic literal x Fly",
		"agent cluster literal c ClusterAction",
	} {
		if _, err := Parse([]byte(bad), "f", nil); !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "f:1:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
