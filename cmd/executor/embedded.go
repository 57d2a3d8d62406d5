package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startEmbedded runs kfake on ln (bound by bindListeners) with its data
// directory: the embedded default keeps its log across restarts like a
// real broker would. Like a real broker's defaults, it leaves its writes
// to the page cache: a committed transaction survives a crash of this
// process, not a power loss, unless sync (every write fsynced before it
// is acknowledged).
func startEmbedded(ln net.Listener, dir string, partitions int32, sync bool, log *slog.Logger) ([]string, func(), error) {
	addr := ln.Addr().(*net.TCPAddr)
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(addr.Port),
		kfake.ListenFn(once(ln)),
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
	log.Info("embedded broker (kfake) started", "addr", addr.String(), "data_dir", dir, "fsync_every_write", sync)
	return c.ListenAddrs(), c.Close, nil
}

// once hands kfake the bound listener of its one broker; a second
// listener (no broker but the first is ever asked for) is refused.
func once(ln net.Listener) func(string, string) (net.Listener, error) {
	given := false
	return func(string, string) (net.Listener, error) {
		if given {
			return nil, errors.New("the embedded broker has one listener, on --embedded-addr")
		}
		given = true
		return ln, nil
	}
}
