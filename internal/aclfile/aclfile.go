// Package aclfile reads deploy/kafka/acls: the least-privilege Kafka ACLs
// of toolexec's roles, one grant per line:
//
//	# role       resource          pattern   name               operations
//	agent        topic             literal   ${PREFIX}intents   Write,Describe
//
// role is a SASL user name (the principal User:<role>); resource is topic,
// group, transactional-id or cluster (name kafka-cluster); pattern is
// literal or prefixed; operations are Kafka's names (Read, Write, Create,
// Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs,
// IdempotentWrite). ${NAME} in a name is a variable (PREFIX,
// EXECUTOR_GROUP, RECONCILER_GROUP by default, see Defaults). Every line
// is an ALLOW; there is no DENY: what a role may not do is what no line
// grants (the broker runs with allow.everyone.if.no.acl.found=false).
package aclfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrFile is wrapped by every parse error.
var ErrFile = errors.New("aclfile")

// Grant is one ALLOW binding: principal, resource, pattern, operation.
type Grant struct {
	Role      string
	Resource  kmsg.ACLResourceType
	Pattern   kmsg.ACLResourcePatternType
	Name      string
	Operation kmsg.ACLOperation
}

// Principal is the Kafka principal of the grant's role.
func (g Grant) Principal() string { return "User:" + g.Role }

// String is the grant as kafka-acls would describe it.
func (g Grant) String() string {
	return fmt.Sprintf("%s %s %s:%s:%s", g.Principal(), g.Operation, g.Resource, strings.ToLower(g.Pattern.String()), g.Name)
}

// Defaults are the variables' default values: the topic prefix and the
// groups of the commands' defaults. The executor's transactional ids
// start with its group name (executor.Config.TransactionalID).
func Defaults() map[string]string {
	return map[string]string{"PREFIX": "tool.", "EXECUTOR_GROUP": "tool-executor", "RECONCILER_GROUP": "tool-reconciler"}
}

var resources = map[string]kmsg.ACLResourceType{
	"topic": kmsg.ACLResourceTypeTopic, "group": kmsg.ACLResourceTypeGroup,
	"transactional-id": kmsg.ACLResourceTypeTransactionalId, "cluster": kmsg.ACLResourceTypeCluster,
}

var patterns = map[string]kmsg.ACLResourcePatternType{
	"literal": kmsg.ACLResourcePatternTypeLiteral, "prefixed": kmsg.ACLResourcePatternTypePrefixed,
}

// Load reads the file at path with vars (missing names take Defaults).
func Load(path string, vars map[string]string) ([]Grant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFile, err)
	}
	return Parse(b, path, vars)
}

// Parse reads the content of an ACL file.
func Parse(data []byte, source string, vars map[string]string) ([]Grant, error) {
	all := Defaults()
	for k, v := range vars {
		all[k] = v
	}
	var out []Grant
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		gs, err := parseLine(line, all)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrFile, source, n, err)
		}
		out = append(out, gs...)
	}
	return out, sc.Err()
}

func parseLine(line string, vars map[string]string) ([]Grant, error) {
	f := strings.Fields(line)
	if len(f) != 5 {
		return nil, fmt.Errorf("want 5 fields (role resource pattern name operations), got %d", len(f))
	}
	res, ok := resources[f[1]]
	if !ok {
		return nil, fmt.Errorf("resource %q: want topic, group, transactional-id or cluster", f[1])
	}
	pat, ok := patterns[f[2]]
	if !ok {
		return nil, fmt.Errorf("pattern %q: want literal or prefixed", f[2])
	}
	name, err := expand(f[3], vars)
	if err != nil {
		return nil, err
	}
	if res == kmsg.ACLResourceTypeCluster && name != "kafka-cluster" {
		return nil, fmt.Errorf("the cluster resource is named kafka-cluster, not %q", name)
	}
	var out []Grant
	for _, op := range strings.Split(f[4], ",") {
		o, err := kmsg.ParseACLOperation(strings.ToLower(op))
		if err != nil || o <= kmsg.ACLOperationAll {
			return nil, fmt.Errorf("operation %q is not a Kafka ACL operation", op)
		}
		out = append(out, Grant{Role: f[0], Resource: res, Pattern: pat, Name: name, Operation: o})
	}
	return out, nil
}

func expand(s string, vars map[string]string) (string, error) {
	var err error
	out := os.Expand(s, func(k string) string {
		v, ok := vars[k]
		if !ok && err == nil {
			err = fmt.Errorf("unknown variable ${%s}", k)
		}
		return v
	})
	return out, err
}

// Roles lists the roles the grants name, sorted.
func Roles(gs []Grant) []string {
	set := map[string]bool{}
	for _, g := range gs {
		set[g.Role] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}
