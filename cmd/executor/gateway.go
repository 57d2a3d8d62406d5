package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/console"
	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/internal/cli"
	"github.com/atmostonce/toolexec/internal/httpserve"
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
const tokenHint = "the embedded executor prints it at start and keeps it in <data-dir>/" + tokenFile

// embeddedShutdown is how long waiting requests get when the process
// stops. Why short: the executor in this process stops too, so their
// answers would not come; clients retry with the same key.
const embeddedShutdown = 2 * time.Second

// startGateway runs the gateway next to the executor (the topics exist by
// now: executor.New ensured them), with the executor's tools, its metrics
// on the executor's registry. The returned stop closes it.
func startGateway(ctx context.Context, f *runFlags, conn *cli.Conn, reg *tools.Registry, promReg prometheus.Registerer, log *slog.Logger) (func(), error) {
	if !f.gw.on {
		return func() {}, nil
	}
	tenants, kept, err := gatewayTenants(f, log)
	if err != nil {
		return nil, err
	}
	if err := noSharedTokens(f, tenants); err != nil {
		return nil, err
	}
	hint := ""
	if kept != nil {
		hint = tokenHint
	}
	host, _ := os.Hostname()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	g, err := gateway.New(startCtx, gateway.Config{
		Brokers: conn.Seeds, KafkaOpts: conn.Opts, Prefix: f.prefix, Tools: reg.Specs(), Tenants: gateway.NewTenantStore(tenants),
		InstanceID: gateway.InstanceIDFrom(host), ClientID: f.clientID + "-gateway", TokenHint: hint, Logger: log, Registerer: promReg,
		TracerProvider: f.tracer,
	})
	cancel()
	if err != nil {
		return nil, err
	}
	srv, err := httpserve.Listen(f.gw.addr, g.Handler(), log)
	if err != nil {
		g.Close()
		return nil, errors.Join(err, errors.New("use --gateway-addr, or --gateway=false"))
	}
	stopHUP := func() {}
	if f.gw.tenants != "" {
		stopHUP = g.ReloadOnSignal(f.gw.tenants, syscall.SIGHUP)
	}
	log.Info("gateway running", "http", f.gw.addr, "reply_topic", g.ReplyTopic(), "tenants", strings.Join(tenants.Names(), ","))
	if kept != nil {
		fmt.Print(clientBanner(f.gw.addr, *kept))
	}
	return func() {
		stopHUP()
		sctx, cancel := context.WithTimeout(context.Background(), embeddedShutdown)
		defer cancel()
		_ = srv.Shutdown(sctx)
		g.Close()
	}, nil
}

// noSharedTokens refuses an operators file that lists a tenant's token: a
// tenant's gateway token must never open the operator console.
func noSharedTokens(f *runFlags, tenants *gateway.Tenants) error {
	if f.rec.operators == "" {
		return nil
	}
	ops, err := console.LoadOperators(f.rec.operators)
	if err != nil {
		return err
	}
	if ops.Shares(tenants.Tokens()) {
		return fmt.Errorf("%s lists a token that is also a tenant's gateway token: give each operator a token of their own", f.rec.operators)
	}
	return nil
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

// defaultToken reads the token file, or writes a new random token to it
// (mode 0600).
func defaultToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
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
