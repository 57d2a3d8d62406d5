package integration

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

var (
	brokers       []string
	binary        string // the executor built with -tags faults
	gatewayBinary string // cmd/gateway
	realKafka     bool
	// clusterSeeds is KAFKA_CLUSTER_BROKERS: the suite runs on the
	// three-node cluster of deploy/kafka/start --cluster (KAFKA_BROKERS
	// names the same nodes), and the tests that aim faults at its nodes
	// (cluster_test.go, through deploy/kafka/node) run.
	clusterSeeds []string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "toolexec-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if testing.Short() {
		return m.Run()
	}
	binary = filepath.Join(dir, "executor")
	if out, err := exec.Command("go", "build", "-tags", "faults", "-o", binary, "../../cmd/executor").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build executor: %v\n%s", err, out)
		return 1
	}
	gatewayBinary = filepath.Join(dir, "gateway")
	if out, err := exec.Command("go", "build", "-o", gatewayBinary, "../../cmd/gateway").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build gateway: %v\n%s", err, out)
		return 1
	}
	if os.Getenv("KAFKA_CLUSTER_BROKERS") != "" && os.Getenv("KAFKA_BROKERS") == "" {
		fmt.Fprintln(os.Stderr, "KAFKA_CLUSTER_BROKERS is set but KAFKA_BROKERS is not: set both to the cluster's nodes (the suite would run on kfake and skip the cluster tests)")
		return 1
	}
	if env := os.Getenv("KAFKA_BROKERS"); env != "" {
		brokers, realKafka = strings.Split(env, ","), true
		fmt.Fprintln(os.Stderr, "integration: real broker at", env)
		if c := os.Getenv("KAFKA_CLUSTER_BROKERS"); c != "" {
			if c != env {
				fmt.Fprintf(os.Stderr, "KAFKA_CLUSTER_BROKERS=%s: set KAFKA_BROKERS to the same nodes (it is %s)\n", c, env)
				return 1
			}
			clusterSeeds = brokers
			fmt.Fprintln(os.Stderr, "integration: the broker is the three-node cluster of deploy/kafka/start --cluster")
		}
		return m.Run()
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		return 1
	}
	defer c.Close()
	brokers = c.ListenAddrs()
	fmt.Fprintln(os.Stderr, "integration: kfake at", brokers)
	return m.Run()
}

// seedList is the seed brokers as a --brokers flag takes them.
func seedList() string { return strings.Join(brokers, ",") }

func brokerName() string {
	if realKafka {
		return "kafka"
	}
	return "kfake"
}
