package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The banner's export lines point a client in any directory at the
// gateway and the token file: a shell that evaluates them gets the URL
// and an absolute path that holds the token. The banner names the file,
// never the token: stdout is a log in a container.
func TestClientBannerExportsWorkFromAnotherDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data dir's")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, tokenFile)
	if err := os.WriteFile(path, []byte("tx_secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	banner := clientBanner("0.0.0.0:8080", keptToken{path: path, token: "tx_secret"})
	var exports []string
	for _, line := range strings.Split(banner, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "export ") {
			exports = append(exports, l)
		}
	}
	if len(exports) != 2 || strings.Contains(banner, "tx_secret") || !strings.Contains(banner, path) {
		t.Fatalf("banner:\n%s", banner)
	}
	script := strings.Join(exports, "\n") + "\ncd / && printf '%s|' \"$TOOLEXEC_URL\" && cat \"$TOOLEXEC_TOKEN_FILE\""
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := string(out); got != "http://127.0.0.1:8080|tx_secret\n" {
		t.Fatalf("the exports give %q", got)
	}
}

func TestGatewayURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080", ":8080": "http://127.0.0.1:8080",
		"[::]:9000": "http://127.0.0.1:9000", "[::1]:9000": "http://[::1]:9000", "gw.local:80": "http://gw.local:80",
	} {
		if got := gatewayURL(addr); got != want {
			t.Errorf("gatewayURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
