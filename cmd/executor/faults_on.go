//go:build faults

package main

import (
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/executor"
)

// hooksFromEnv reads TOOLEXEC_FAULT="<point>:<action>[:<key substring>]",
// for example "after_started_commit:exit" or "during_call:hang:order-7".
// Actions: exit (os.Exit(137) on the spot, as kill -9 would leave it: no
// drain, no deferred cleanup), hang (block forever), sleep=<duration>.
func hooksFromEnv(log *slog.Logger) executor.Hooks {
	spec := os.Getenv("TOOLEXEC_FAULT")
	if spec == "" {
		return executor.Hooks{}
	}
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) < 2 {
		log.Error("TOOLEXEC_FAULT ignored: want <point>:<action>[:<key>]", "value", spec)
		return executor.Hooks{}
	}
	point, action, match := executor.Point(parts[0]), parts[1], ""
	if len(parts) == 3 {
		match = parts[2]
	}
	log.Warn("fault injection armed", "point", point, "action", action, "key", match)
	return executor.Hooks{At: func(p executor.Point, rk string) {
		if p != point || !strings.Contains(rk, match) {
			return
		}
		fault(action, p, rk, log)
	}}
}

func fault(action string, p executor.Point, rk string, log *slog.Logger) {
	log.Warn("fault injected", "point", p, "key", rk, "action", action)
	switch {
	case action == "exit":
		os.Exit(137)
	case action == "hang":
		select {}
	case strings.HasPrefix(action, "sleep="):
		d, _ := time.ParseDuration(strings.TrimPrefix(action, "sleep="))
		time.Sleep(d)
	}
}
