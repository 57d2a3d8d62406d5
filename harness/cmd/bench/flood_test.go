package main

import (
	"strings"
	"testing"
	"time"
)

// --scenario flood takes its durations from flags, shorter under --quick
// unless given, and refuses an unknown mode.
func TestFloodFlags(t *testing.T) {
	c, err := parseFlags([]string{"--scenario", "flood", "--quick", "--flood-duration", "20s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.scenario != "flood" || c.flood.quiet != quickDefaults.floodQuiet || c.flood.duration != 20*time.Second ||
		strings.Join(c.flood.modes, ",") != "gateway,kafka" || c.flood.rate != 100 || c.flood.senders != 8 {
		t.Fatalf("flood config %+v", c.flood)
	}
	if _, err := parseFlags([]string{"--scenario", "flood", "--flood-modes", "gateway,grpc"}); err == nil || !strings.Contains(err.Error(), "grpc") {
		t.Fatalf("an unknown mode: %v", err)
	}
	if _, err := parseFlags([]string{"--scenario", "floods"}); err == nil {
		t.Fatal("an unknown scenario was accepted")
	}
}
