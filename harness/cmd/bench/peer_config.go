package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The peers the bench knows. Each is run by hand (`--peer NAME`), never in
// CI: they need a server from a package registry and minutes of time.
const (
	peerRestate  = "restate"
	peerPostgres = "postgres"
)

var knownPeers = []string{peerRestate, peerPostgres}

// Versions the peer comparison was written and measured against.
const (
	restateVersion = "1.7.12" // npm @restatedev/restate-server; its Go SDK is pinned in peers/restatesvc/go.mod
)

// Peer-comparison limits.
const (
	// defaultCrashCalls is how many calls are inside their tool when the
	// crash test kills the system.
	defaultCrashCalls = 100
	// maxCrashCalls bounds the crash test's concurrent calls: each is a
	// goroutine and a connection through every process of the system.
	maxCrashCalls = 1000
)

// peerConfig is --peer and the flags that only the peer comparison reads.
type peerConfig struct {
	raw        string   // --peer as given
	names      []string // parsed, in the order given, without duplicates
	crashCalls int      // calls inside the tool when the crash test kills
	restateDir string   // npm prefix holding @restatedev/restate-server
	pgBin      string   // directory of initdb and postgres
	portBase   int      // first port of the comparison's listeners; 0: the OS picks
	brokerPID  int      // the real broker's process, to count its CPU; 0: not counted
	src        string   // directory holding restatesvc/ and pgsvc/
}

func (p *peerConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.raw, "peer", "", "compare with peers over HTTP, by hand: restate, postgres, or both comma-separated (docs/PERFORMANCE.md, Peers)")
	fs.IntVar(&p.crashCalls, "peer-crash-calls", defaultCrashCalls, "calls inside the tool when the crash test kills the service or the executor")
	fs.StringVar(&p.restateDir, "restate-dir", defaultRestateDir(), "npm prefix where @restatedev/restate-server@"+restateVersion+" is (installed there with npm when missing)")
	fs.StringVar(&p.pgBin, "pg-bin", "/usr/lib/postgresql/15/bin", "directory of PostgreSQL's initdb and postgres (Debian's postgresql package)")
	fs.IntVar(&p.portBase, "port-base", 0, "first TCP port of the peer comparison's listeners (tool, gateway, peers); 0 lets the OS pick free ports")
	fs.IntVar(&p.brokerPID, "broker-pid", 0, "pid of the real broker (e.g. $KAFKA_RUN_DIR/kafka.pid), to report its CPU per call beside the executor's")
	fs.StringVar(&p.src, "peers-src", defaultPeersSrc(), "directory of the peers' Go services (harness/cmd/bench/peers)")
}

// parse checks --peer and the flags that go with it.
func (p *peerConfig) parse() error {
	p.names = nil
	for n := range strings.SplitSeq(p.raw, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case !slices.Contains(knownPeers, n):
			return fmt.Errorf("--peer: unknown peer %q (known: %s)", n, strings.Join(knownPeers, ", "))
		case !slices.Contains(p.names, n):
			p.names = append(p.names, n)
		}
	}
	switch {
	case p.crashCalls < 1 || p.crashCalls > maxCrashCalls:
		return fmt.Errorf("--peer-crash-calls: 1..%d", maxCrashCalls)
	case p.portBase != 0 && (p.portBase < 1024 || p.portBase > 65000):
		return errors.New("--port-base: 1024..65000, or 0")
	case p.brokerPID < 0:
		return errors.New("--broker-pid: must not be negative")
	}
	return nil
}

func (p *peerConfig) enabled() bool { return len(p.names) > 0 }

func defaultRestateDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "toolexec-bench", "restate")
	}
	return filepath.Join(os.TempDir(), "toolexec-bench", "restate")
}

// defaultPeersSrc is harness/cmd/bench/peers beside this file when the binary was
// built from the source tree (go run), else relative to the working
// directory (the repository root).
func defaultPeersSrc() string {
	if _, file, _, ok := runtime.Caller(0); ok {
		if d := filepath.Join(filepath.Dir(file), "peers"); dirExists(d) {
			return d
		}
	}
	return filepath.Join("cmd", "bench", "peers")
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}
