package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startEmbedded runs kfake with its data directory: the embedded default
// keeps its log across restarts like a real broker would.
func startEmbedded(addr, dir string, partitions int32, log *slog.Logger) ([]string, func(), error) {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedded-addr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedded-addr %q: bad port", addr)
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }),
		kfake.DataDir(dir),
		kfake.DefaultNumPartitions(int(partitions)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded broker on %s: %w", addr, err)
	}
	log.Info("embedded broker (kfake) started", "addr", addr, "data_dir", dir)
	return c.ListenAddrs(), c.Close, nil
}
