// Command acls makes a cluster's ACLs for toolexec's roles what an ACL
// file (deploy/kafka/acls, package internal/aclfile) says, or prints the
// equivalent kafka-acls commands.
//
//	acls sync  --kafka-config admin.properties [--var PREFIX=tool.] FILE
//	acls print [--var NAME=VALUE] FILE
//	acls ping  --kafka-config F    exit 0 when a broker answers as F says
//
// sync creates the grants that are missing and deletes the ALLOW grants of
// the file's roles that the file does not list, so a grant removed from
// the file is removed from the cluster. It touches no other principal. It
// needs a principal allowed to alter ACLs (the super user admin).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/internal/aclfile"
)

func main() {
	cli.Main("acls", func([]string) error { return errors.New("usage: acls sync|print [flags] FILE") },
		map[string]func([]string) error{"sync": syncMain, "print": printMain, "ping": pingMain})
}

// vars is a repeated --var NAME=VALUE flag.
type vars map[string]string

func (v vars) String() string { return fmt.Sprint(map[string]string(v)) }

func (v vars) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("--var %q: want NAME=VALUE", s)
	}
	v[k] = val
	return nil
}

func parse(fs *flag.FlagSet, args []string) ([]aclfile.Grant, error) {
	vs := vars{}
	fs.Var(vs, "var", "NAME=VALUE for ${NAME} in the file (PREFIX, EXECUTOR_GROUP, RECONCILER_GROUP); repeatable")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, errors.New("give exactly one ACL file")
	}
	return aclfile.Load(fs.Arg(0), vs)
}

func syncMain(args []string) error {
	fs := flag.NewFlagSet("acls sync", flag.ContinueOnError)
	kafka := cli.KafkaFlags(fs)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	grants, err := parse(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	created, deleted, err := Sync(ctx, conn, grants)
	fmt.Fprintf(os.Stderr, "acls: %d grants for %s: %d created, %d deleted\n", len(grants), strings.Join(aclfile.Roles(grants), ", "), created, deleted)
	return err
}

func printMain(args []string) error {
	fs := flag.NewFlagSet("acls print", flag.ContinueOnError)
	grants, err := parse(fs, args)
	if err != nil {
		return err
	}
	for _, g := range grants {
		fmt.Println(kafkaACLsCommand(g))
	}
	return nil
}

// kafkaACLsCommand is the kafka-acls.sh line that adds g.
func kafkaACLsCommand(g aclfile.Grant) string {
	res := map[string]string{"TOPIC": "--topic", "GROUP": "--group", "TRANSACTIONAL_ID": "--transactional-id", "CLUSTER": "--cluster"}[g.Resource.String()]
	target := res + " " + g.Name
	if res == "--cluster" {
		target = res
	}
	return fmt.Sprintf("kafka-acls.sh --bootstrap-server \"$BROKERS\" --command-config admin.properties --add --allow-principal %s --operation %s %s --resource-pattern-type %s",
		g.Principal(), opName(g), target, strings.ToLower(g.Pattern.String()))
}

// opName is the operation as kafka-acls spells it (ClusterAction, DescribeConfigs).
func opName(g aclfile.Grant) string {
	parts := strings.Split(strings.ToLower(g.Operation.String()), "_")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, "")
}

// pingMain checks once (kafkaconfig.Check) that a broker answers with the
// given settings: deploy/kafka/start --secure's readiness probe, which
// needs SCRAM-SHA-512 against Kafka 4 (older librdkafka, such as Debian
// 12's kcat, cannot authenticate there).
func pingMain(args []string) error {
	fs := flag.NewFlagSet("acls ping", flag.ContinueOnError)
	kafka := cli.KafkaFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := kafka.Connect(context.Background())
	return err
}
