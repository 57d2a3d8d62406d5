package main

import (
	"fmt"
	"log/slog"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/atmostonce/toolexec/console"
)

// consoleTokenFile is where the embedded default keeps its operator's
// token: a restart reuses it, so a newcomer's sign-in keeps working.
const consoleTokenFile = "console.token"

// defaultOperator is the console's operator when no --operators file
// names any and the console listens on a loopback address: one operator,
// named for the user who runs the process (recorded as who settles a
// key), with the token kept in <data-dir>/console.token (made at the
// first start). Elsewhere the console stays off: its token is a
// development convenience kept in a file on this machine, and anything
// reachable by others takes an operators file. nil, nil: off.
func defaultOperator(f *runFlags, log *slog.Logger) (*console.OperatorStore, *keptToken, error) {
	if f.rec.operators != "" || !loopback(f.rec.httpAddr) {
		return nil, nil, nil
	}
	path := filepath.Join(f.dataDir, consoleTokenFile)
	token, err := defaultToken(path)
	if err != nil {
		return nil, nil, fmt.Errorf("console token: %w", err)
	}
	ops, err := console.SingleOperator(operatorName(), token)
	if err != nil {
		return nil, nil, err
	}
	log.Info("operator console: one operator, its token in the token file", "token_file", path)
	return ops, &keptToken{path: path, token: token}, nil
}

// operatorName is the login name of the user running the process, where
// it may name an operator; else "operator".
func operatorName() string {
	if u, err := user.Current(); err == nil && console.ValidOperator(u.Username) {
		return u.Username
	}
	return "operator"
}

// consoleBanner is what the embedded default prints once its console is
// served with the generated operator: where, who, and where the token is
// (never the token: stdout is a log), and a sign-in a script can do.
func consoleBanner(addr string, kept keptToken) string {
	abs, err := filepath.Abs(kept.path)
	if err != nil {
		abs = kept.path
	}
	url := gatewayURL(addr) + "/console"
	var b strings.Builder
	fmt.Fprintf(&b, "operator console: %s, operator %q, the token in %s\n", url, operatorName(), abs)
	fmt.Fprintf(&b, "  sign in with that token; a script (whose session cookie a headless browser can take):\n")
	fmt.Fprintf(&b, "  curl -c cookies.txt -X POST -H \"Authorization: Bearer $(cat %s)\" %s/signin\n", shellQuote(abs), url)
	return b.String()
}
