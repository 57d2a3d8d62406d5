package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/gateway"
)

// --instance-id names the reply topic, so a StatefulSet's pod name gives
// each instance the same topic across restarts; an id that cannot name a
// topic is refused before the start.
func TestInstanceIDNamesTheReplyTopic(t *testing.T) {
	f, err := parseFlags([]string{"--tools", "t.yaml", "--tenants", "x.yaml", "--topic-prefix", "team.", "--instance-id", "tool-gateway-0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := gateway.ReplyTopic(f.prefix, f.instanceID); got != "team.gateway.tool-gateway-0" {
		t.Fatalf("reply topic %q", got)
	}
	for _, bad := range []string{"Tool_Gateway", "gw/0", "", strings.Repeat("a", 65)} {
		if _, err := parseFlags([]string{"--tools", "t.yaml", "--tenants", "x.yaml", "--instance-id", bad}); err == nil || !strings.Contains(err.Error(), "--instance-id") {
			t.Errorf("--instance-id %q: %v, want a refusal", bad, err)
		}
	}
}

// The version the release stamps with -ldflags -X is what --version
// prints (the Dockerfile's build flags).
func TestVersionIsStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/atmostonce/toolexec/internal/buildinfo.Version=v9.9.9-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "gateway v9.9.9-test (go") {
		t.Fatalf("--version: %q, %v", out, err)
	}
}
