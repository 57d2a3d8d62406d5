package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
)

// Environment variables that clients read (the Python package's
// Client.http(), the examples): the gateway's URL and the token file.
const (
	envGatewayURL = "TOOLEXEC_URL"
	envTokenFile  = "TOOLEXEC_TOKEN_FILE"
)

// clientBanner is what the embedded default prints once its gateway
// listens: where the token is kept (never the token: stdout is a log in
// a container, and tokens stay out of logs), and the two export lines
// that let a client in any directory find the gateway and the token (the
// token file's path is made absolute for that).
func clientBanner(addr string, kept keptToken) string {
	abs, err := filepath.Abs(kept.path)
	if err != nil {
		abs = kept.path
	}
	url := gatewayURL(addr)
	var b strings.Builder
	fmt.Fprintf(&b, "gateway: %s, tenant \"default\", its token in %s\n", url, abs)
	fmt.Fprintf(&b, "  for clients in any directory (the Python package's Client.http() reads these):\n")
	fmt.Fprintf(&b, "  export %s=%s\n", envGatewayURL, shellQuote(url))
	fmt.Fprintf(&b, "  export %s=%s\n", envTokenFile, shellQuote(abs))
	fmt.Fprintf(&b, "  curl -H \"Authorization: Bearer $(cat $%s)\" $%s/v1/tools\n", envTokenFile, envGatewayURL)
	return b.String()
}

// gatewayURL is the URL a client on this machine uses for the listen
// address addr: a wildcard host (":8080", "0.0.0.0:8080", "[::]:8080")
// is reached on the loopback address.
func gatewayURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that need no quoting.
func shellQuote(s string) string {
	safe := func(r rune) bool {
		return r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:@%+=,[]", r))
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !safe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
