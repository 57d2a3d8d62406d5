package chaos

import (
	"fmt"
	"path/filepath"
	"strings"
)

// startCluster starts the run's private three-node cluster (wiped first),
// the proxies in front of its nodes, and the executors' disks.
func (rn *run) startCluster() error {
	if !rn.cfg.OwnBroker {
		return fmt.Errorf("chaos: --cluster starts a cluster of its own: not with --own-broker=false")
	}
	rn.cluster = &Cluster{Repo: rn.cfg.Repo, RunDir: rn.cfg.BrokerRunDir, Port: rn.cfg.BrokerPort, Features: rn.cfg.BrokerFeatures}
	if err := rn.startOwned(rn.cluster, "a private three-node cluster on "+strings.Join(rn.cluster.Addrs(), ","), rn.cluster.RunDir); err != nil {
		return err
	}
	rn.brokers = rn.cluster.Addrs()
	proxied, err := rn.cluster.startProxies()
	if err != nil {
		return err
	}
	rn.undo = append(rn.undo, rn.cluster.closeProxies)
	rn.exBroker = strings.Join(proxied, ",")
	rn.logf("executors reach the nodes through toxiproxies on %s (listener PROXIED)", rn.exBroker)
	if rn.cfg.DiskFaults {
		rn.disks = &disks{size: rn.cfg.DiskSize}
		// Registered before the fleet's stop: undone after it.
		rn.undo = append(rn.undo, rn.disks.unmountAll)
		if err := rn.disks.mount(filepath.Join(rn.dir, "ex0")); err != nil {
			return err
		}
	}
	return nil
}

// healCluster, after the faults: every proxy healed, every node running
// and awake.
func (rn *run) healCluster() error {
	if rn.cluster == nil {
		return nil
	}
	rn.cluster.healProxies()
	for n := 1; n <= clusterNodes; n++ {
		_ = rn.cluster.Node("resume", n) // fails when the node is not running: start brings it
	}
	return rn.cluster.Start()
}
