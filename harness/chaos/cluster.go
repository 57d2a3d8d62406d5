package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Cluster is the three-node cluster of deploy/kafka/start --cluster that a
// --cluster run owns: each node a broker and a KRaft controller, with the
// production durability settings. The harness, the load and the
// reconciler reach the nodes directly; the executors reach each node
// through a toxiproxy of its own, so that one node can be cut from them.
type Cluster struct {
	Repo, RunDir string
	// Port is node 1's client port; node n listens on Port+(n-1)*100 for
	// clients, the next port for its controller, the one after for the
	// proxied listener, and its proxy on the one after that.
	Port     int
	Extra    string      // server.properties lines for every node (KAFKA_EXTRA_CONFIG)
	Features string      // feature levels at format (KAFKA_FEATURES)
	proxies  []*NetProxy // by node - 1
}

// clusterNodes is the size of the cluster; clusterPortStep the distance
// between two nodes' ports.
const (
	clusterNodes    = 3
	clusterPortStep = 100
)

// nodePort is node n's client port.
func (c *Cluster) nodePort(n int) int { return c.Port + (n-1)*clusterPortStep }

func (c *Cluster) env() []string {
	env := append(os.Environ(), fmt.Sprintf("KAFKA_CLUSTER_PORT=%d", c.Port), fmt.Sprintf("KAFKA_CLUSTER_PORT_STEP=%d", clusterPortStep),
		"KAFKA_CLUSTER_RUN_DIR="+c.RunDir, "KAFKA_EXTRA_CONFIG="+c.Extra, "KAFKA_FEATURES="+c.Features)
	for n := 1; n <= clusterNodes; n++ {
		env = append(env, fmt.Sprintf("KAFKA_NODE_EXTRA_CONFIG_%d=%s", n, proxiedListeners(c.nodePort(n))))
	}
	return env
}

func (c *Cluster) script(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.Repo, "deploy/kafka", name), args...)
	cmd.Env = c.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: deploy/kafka/%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Start starts the nodes that are not running (idempotent).
func (c *Cluster) Start() error { return c.script("start", "--cluster") }

// Stop stops every node cleanly, keeping the data.
func (c *Cluster) Stop() error { return c.script("stop", "--cluster") }

// Wipe stops every node and deletes the cluster's data.
func (c *Cluster) Wipe() error { return c.script("stop", "--cluster", "--wipe") }

// Node runs deploy/kafka/node action n: kill, stop, start, pause, resume.
func (c *Cluster) Node(action string, n int) error { return c.script("node", action, fmt.Sprint(n)) }

// Addrs are the nodes' direct client addresses.
func (c *Cluster) Addrs() []string {
	var out []string
	for n := 1; n <= clusterNodes; n++ {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", c.nodePort(n)))
	}
	return out
}

// startProxies starts one toxiproxy per node, in front of its PROXIED
// listener, at the address it advertises; it returns their addresses.
func (c *Cluster) startProxies() ([]string, error) {
	var out []string
	for n := 1; n <= clusterNodes; n++ {
		np, err := proxyFor(fmt.Sprintf("kafka-node%d", n), c.nodePort(n))
		if err != nil {
			c.closeProxies()
			return nil, err
		}
		c.proxies = append(c.proxies, np)
		out = append(out, np.Addr())
	}
	return out, nil
}

// proxy is node n's proxy.
func (c *Cluster) proxy(n int) *NetProxy { return c.proxies[n-1] }

// healProxies removes every toxic.
func (c *Cluster) healProxies() {
	for _, p := range c.proxies {
		p.Remove()
	}
}

func (c *Cluster) closeProxies() {
	for _, p := range c.proxies {
		p.Close()
	}
	c.proxies = nil
}
