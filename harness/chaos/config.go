package chaos

import (
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/tools"
)

// The tools of the run, one per class, all served by the Ledger.
const (
	ToolNative = "c.native"
	ToolProbe  = "c.probe"
	ToolComp   = "c.comp"
	ToolUndo   = "c.undo"
	ToolIrrev  = "c.irrev"
	ToolRead   = "c.read"
	// ToolApproval (native_key, approval: required) is decided by the
	// run's Approver (approver.go).
	ToolApproval = "c.approval"
)

// classOf is the class of each tool, as in toolsYAML.
var classOf = map[string]tools.Class{ToolNative: tools.NativeKey, ToolProbe: tools.Probe, ToolComp: tools.Compensatable,
	ToolUndo: tools.NativeKey, ToolIrrev: tools.Irreversible, ToolRead: tools.ReadOnly, ToolApproval: tools.NativeKey}

// pathOf is the ledger path of each tool.
var pathOf = map[string]string{ToolNative: "/native", ToolProbe: "/probe", ToolComp: "/comp", ToolUndo: "/undo",
	ToolIrrev: "/irrev", ToolRead: "/read", ToolApproval: "/approval"}

// approvalTTL is ToolApproval's approval_ttl: longer than the approver's
// pauses (approverPause), short enough that the requests it lets lapse end
// within the run's settle.
const approvalTTL = 8 * time.Second

// Config is one run. The zero value is not usable: see harness/cmd/chaos for the
// defaults.
type Config struct {
	Repo    string // module root (deploy/kafka, ./cmd/...)
	Brokers string // used when OwnBroker is false
	// KafkaConfig is a Kafka client properties file (TLS, SASL) for every
	// client and process of the run; only with OwnBroker false (the
	// private broker is plaintext). Its principal must be allowed to
	// create the run's topics and use its groups (an admin).
	KafkaConfig string
	OwnBroker   bool // start a private broker on BrokerPort, bounce it, stop it at the end
	// BrokerPort and its controller port BrokerPort+1; run dir BrokerRunDir.
	BrokerPort   int
	BrokerRunDir string
	// BrokerFeatures are Kafka feature levels fixed when the private
	// broker or cluster is formatted (KAFKA_FEATURES), e.g.
	// "transaction.version=1".
	BrokerFeatures string
	// Cluster runs on a private three-node cluster instead (deploy/kafka/
	// start --cluster; node n on BrokerPort+(n-1)*100 and the three ports
	// after it), with the cluster's fault kinds (faults_cluster.go).
	Cluster bool
	// DiskFaults mounts a small tmpfs on each executor's data dir (root
	// only) for the disk_full faults of a --cluster run.
	DiskFaults bool
	DiskSize   string        // the tmpfs size, e.g. "256m"
	Duration   time.Duration // of the load and the faults
	Settle     time.Duration // longest wait for the reconciler afterwards
	Seed       uint64
	Executors  int
	Partitions int
	Rate       float64 // intents per second (bursts come on top)
	FaultGap   time.Duration
	Only       []string // fault kinds to inject; empty: all
	RequireAll bool     // a fault kind never injected is a violation (CI)
	DropEvery  uint32   // the ledger drops the answer of about one key in DropEvery
	WorkDir    string   // binaries, data dirs, logs; a temp dir when empty
	Keep       bool     // keep WorkDir
	Verbose    bool
}

// sessionTimeout of the executors: a zombie is stopped longer than this.
const sessionTimeout = 3 * time.Second

// toolsYAML is the tool file of the run; base is the ledger's address as
// the executors reach it (through the network proxy).
func toolsYAML(base string) string { return ToolsYAML(base, nil) }

// ToolsYAML is the tool file of the ledger's tools, reached at base;
// more, if not nil, gives YAML lines to add to a tool's entry (each
// indented by four spaces and ending in a newline), e.g. max_in_flight.
func ToolsYAML(base string, more func(tool string) string) string {
	u := "http://" + base
	entry := func(name, extra string) string {
		if more != nil {
			extra += more(name)
		}
		return fmt.Sprintf("  - name: %s\n    class: %s\n    url: %s%s\n    timeout: 1s\n    pending_ttl: 6s\n    retention: 1h\n    retries: 2\n%s",
			name, classOf[name], u, pathOf[name], extra)
	}
	return "tools:\n" +
		entry(ToolNative, "") +
		entry(ToolProbe, "    probe_url: "+u+"/probe/status\n    probe_fence: true\n") +
		entry(ToolComp, "    compensate_with: "+ToolUndo+"\n") +
		entry(ToolUndo, "") +
		entry(ToolIrrev, "") +
		entry(ToolRead, "") +
		entry(ToolApproval, fmt.Sprintf("    approval: required\n    approval_ttl: %s\n", approvalTTL))
}
