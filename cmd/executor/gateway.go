package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// gatewayFlags configure the gateway embedded in the executor process: on
// by default, so that a newcomer can curl at once.
type gatewayFlags struct {
	on            bool
	addr, tenants string
}

func addGatewayFlags(fs *flag.FlagSet) *gatewayFlags {
	f := &gatewayFlags{}
	fs.BoolVar(&f.on, "gateway", true, "also run the HTTP and MCP gateway in this process (docs/gateway.md); false when cmd/gateway runs separately")
	fs.StringVar(&f.addr, "gateway-addr", "127.0.0.1:8080", "listen address of the embedded gateway")
	fs.StringVar(&f.tenants, "tenants", "", "the gateway's tenants file (reloaded on SIGHUP); empty: the tenant \"default\" with the token in <data-dir>/gateway.token")
	return f
}

// tokenFile is where the default tenant's token is kept: a restart reuses
// it, so a newcomer's curl commands keep working.
const tokenFile = "gateway.token"

// tokenHint ends the gateway's 401 for an unknown token when it serves the
// default tenant. It names the place by the flag, not the path: a wrong
// token earns no knowledge of the server's disk.
const tokenHint = "the embedded executor keeps it in <data-dir>/" + tokenFile

// embeddedShutdown is how long waiting requests get when the process
// stops. Why short: the executor in this process stops too, so their
// answers would not come; clients retry with the same key.
const embeddedShutdown = 2 * time.Second

// startGateway runs the gateway next to the executor (the topics exist by
// now: executor.New ensured them), with the executor's tools, its metrics
// on the executor's registry. The returned stop closes it.
//
// hup carries the SIGHUPs the process took since its first moment
// (cli.Hangups): the tenants file is reloaded on each.
func startGateway(ctx context.Context, f *runFlags, conn *cli.Conn, reg *tools.Registry, promReg prometheus.Registerer, front *front, hup <-chan os.Signal, log *slog.Logger) (func(), error) {
	if !f.gw.on || f.gw.tenants == "" {
		go nothingToReload(ctx, hup, log)
	}
	if !f.gw.on {
		return func() {}, nil
	}
	tenants, kept, err := gatewayTenants(f, log)
	if err != nil {
		return nil, err
	}
	store := gateway.NewTenantStore(tenants)
	if err := store.KeepApart(f.tokens); err != nil { // the console's operators are in force already
		return nil, fmt.Errorf("%w: give each operator a token of their own", err)
	}
	hint := ""
	if kept != nil {
		hint = tokenHint
	}
	id, err := embeddedInstanceID(f.dataDir)
	if err != nil {
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	g, err := gateway.New(startCtx, gateway.Config{
		Brokers: conn.Seeds, KafkaOpts: conn.Opts, Prefix: f.prefix, Tools: reg.Specs(), Tenants: store,
		InstanceID: id, ClientID: f.clientID + "-gateway", TokenHint: hint, Logger: log, Registerer: promReg,
		TracerProvider: f.tracer,
	})
	cancel()
	if err != nil {
		return nil, err
	}
	front.Serve(g.Handler())
	stopHUP := func() {}
	if f.gw.tenants != "" {
		stopHUP = g.ReloadOn(f.gw.tenants, hup)
	}
	log.Info("gateway running", "http", f.gw.addr, "reply_topic", g.ReplyTopic(), "tenants", strings.Join(tenants.Names(), ","))
	if kept != nil {
		fmt.Print(clientBanner(f.gw.addr, *kept))
	}
	return func() {
		stopHUP()
		sctx, cancel := context.WithTimeout(context.Background(), embeddedShutdown)
		defer cancel()
		_ = front.srv.Shutdown(sctx)
		g.Close()
	}, nil
}

// nothingToReload takes the SIGHUPs of a process whose gateway has no
// tenants file, so that an operator's habit (or a supervisor's reload)
// does not kill it.
func nothingToReload(ctx context.Context, hup <-chan os.Signal, log *slog.Logger) {
	for {
		select {
		case <-hup:
			log.Info("SIGHUP: the gateway has no --tenants file to reload")
		case <-ctx.Done():
			return
		}
	}
}

// check refuses, before anything is bound or started, a gateway address
// that others can reach while it would serve the default tenant.
func (g *gatewayFlags) check() error {
	if !g.on || g.tenants != "" {
		return nil
	}
	return localOnly(g.addr)
}

// keptToken is the default tenant's token and the file that keeps it.
type keptToken struct{ path, token string }

// gatewayTenants loads --tenants, or serves the tenant "default" with the
// token kept in <data-dir>/gateway.token (made at the first start), which
// it returns too.
func gatewayTenants(f *runFlags, log *slog.Logger) (*gateway.Tenants, *keptToken, error) {
	if f.gw.tenants != "" {
		ts, err := gateway.LoadTenants(f.gw.tenants)
		return ts, nil, err
	}
	path := filepath.Join(f.dataDir, tokenFile)
	token, err := defaultToken(path)
	if err != nil {
		return nil, nil, err
	}
	log.Info("gateway serves the default tenant; its token is in the token file", "token_file", path)
	ts, err := gateway.SingleTenant(wire.DefaultTenant, token)
	return ts, &keptToken{path: path, token: token}, err
}

// localOnly refuses a listen address others can reach for the default
// tenant: its token is a development convenience kept in a file on this
// machine; anything reachable by others takes --tenants.
func localOnly(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--gateway-addr %q: %w", addr, err)
	}
	if loopback(addr) {
		return nil
	}
	return fmt.Errorf("--gateway-addr %s can be reached from other machines, and without --tenants the gateway serves the "+
		"default tenant with the token in <data-dir>/%s: give a tenants file (--tenants, docs/gateway.md), or listen on 127.0.0.1", addr, tokenFile)
}

// loopback reports whether addr listens where only this machine reaches.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// defaultToken reads the token file, or writes a new random token to it
// (mode 0600). A file that others may read is refused: the token would
// be theirs too.
func defaultToken(path string) (string, error) {
	if b, err := readPrivate(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("gateway token: %w", err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := "tx_" + base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("gateway token: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("gateway token: %w", err)
	}
	return token, nil
}

// readPrivate reads a file that only its owner may read or write (no
// permission for group or others).
func readPrivate(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: others may read or change it; chmod 600 it, or remove it to have a new one made", path, perm)
	}
	return os.ReadFile(path)
}

// instanceFile keeps the embedded gateway's instance id, which names its
// reply topic: a restart on the same data dir (a container's volume)
// reuses the topic instead of creating another.
const instanceFile = "gateway.instance"

// embeddedInstanceID reads the instance id kept in <dataDir>/gateway.instance,
// or makes one (the host name and a random suffix, so that two data dirs
// on one host never share a topic) and keeps it.
func embeddedInstanceID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, instanceFile)
	if b, err := os.ReadFile(path); err == nil {
		id := strings.TrimSpace(string(b))
		if !gateway.ValidInstanceID(id) {
			return "", fmt.Errorf("%s: %q is not an instance id ([a-z0-9._-]{1,64}); remove the file to have a new one made", path, id)
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("gateway instance id: %w", err)
	}
	host, _ := os.Hostname()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	base := gateway.InstanceIDFrom(host)
	id := base[:min(len(base), 55)] + "-" + hex.EncodeToString(suffix)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("gateway instance id: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("gateway instance id: %w", err)
	}
	return id, nil
}
