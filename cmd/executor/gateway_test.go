package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/gateway"
)

// A token file that others may read is refused, not used: the default
// tenant's token would be theirs too.
func TestDefaultTokenFileMustBePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), tokenFile)
	if err := os.WriteFile(path, []byte("tx_shared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tok, err := defaultToken(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a 0644 token file gave %q, %v; want a refusal", tok, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := defaultToken(path); err != nil || tok != "tx_shared" {
		t.Fatalf("a 0600 token file: %q, %v", tok, err)
	}
}

// Without --tenants the embedded gateway listens only where no one else
// can reach it.
func TestDefaultTenantOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "127.0.0.2:1"} {
		if err := localOnly(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "10.0.0.5:8080", "gw.example.com:80"} {
		if err := localOnly(addr); err == nil || !strings.Contains(err.Error(), "--tenants") {
			t.Errorf("%s: %v, want a refusal naming --tenants", addr, err)
		}
	}
	f, err := parseRunFlags([]string{"--gateway-addr", "0.0.0.0:8080", "--data-dir", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.gw.check(); err == nil {
		t.Fatal("the default tenant was served on 0.0.0.0")
	}
}

// The embedded gateway's instance id is kept in the data dir, so a
// restart (a container's, whose host name is new) reuses its reply topic
// instead of leaving one more behind; two data dirs never share one.
func TestEmbeddedInstanceIDIsStable(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	first, err := embeddedInstanceID(a)
	if err != nil || !gateway.ValidInstanceID(first) {
		t.Fatalf("%q, %v", first, err)
	}
	again, err := embeddedInstanceID(a)
	if err != nil || again != first {
		t.Fatalf("restart: %q, %v; want %q", again, err, first)
	}
	other, err := embeddedInstanceID(b)
	if err != nil || other == first {
		t.Fatalf("another data dir: %q, %v", other, err)
	}
	if err := os.WriteFile(filepath.Join(a, instanceFile), []byte("Not/An/Id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := embeddedInstanceID(a); err == nil {
		t.Fatal("an invalid kept id was used")
	}
}
