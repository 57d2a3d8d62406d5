package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startEmbedded runs kfake with its data directory: the embedded default
// keeps its log across restarts like a real broker would. Like a real
// broker's defaults, it leaves its writes to the page cache: a committed
// transaction survives a crash of this process, not a power loss, unless
// sync (every write fsynced before it is acknowledged).
func startEmbedded(addr, dir string, partitions int32, sync bool, log *slog.Logger) ([]string, func(), error) {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedded-addr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedded-addr %q: bad port", addr)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }),
		kfake.DataDir(dir),
		kfake.DefaultNumPartitions(int(partitions)),
	}
	if sync {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded broker on %s: %w", addr, err)
	}
	log.Info("embedded broker (kfake) started", "addr", addr, "data_dir", dir, "fsync_every_write", sync)
	return c.ListenAddrs(), c.Close, nil
}
