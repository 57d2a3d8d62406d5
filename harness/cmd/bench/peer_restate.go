package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// restatePeer is Restate: restate-server (the native binary of the npm
// package, run directly, not through its node wrapper) with a scratch
// base directory, and the Go service of peers/restatesvc registered as a
// deployment. Calls go to the ingress as POST /Bench/Call with an
// idempotency-key header.
type restatePeer struct {
	server, svc *extProc
	ingress     string // host:port
	admin       string
	svcAddr     string
	svcBin      string
	toolURL     string
	logDir      string
	restarts    int
}

// restateService is the service and handler of peers/restatesvc.
const restateService = "Bench"

func (b *bench) startRestate(ctx context.Context, tool *effectTool, pa *ports) (*restatePeer, error) {
	bin, err := restateBinary(ctx, b.cfg.peer.restateDir)
	if err != nil {
		return nil, err
	}
	r := &restatePeer{toolURL: tool.url(), logDir: b.dir}
	if r.svcBin, err = buildPeerService(ctx, b.cfg.peer.src, "restatesvc", b.dir); err != nil {
		return nil, err
	}
	addrs := make([]string, 4)
	for i := range addrs {
		if addrs[i], err = pa.addr(); err != nil {
			return nil, err
		}
	}
	r.ingress, r.admin, r.svcAddr = addrs[0], addrs[1], addrs[3]
	if err := r.startServer(ctx, bin, addrs[2], filepath.Join(b.dir, "restate-data")); err != nil {
		return nil, err
	}
	if err := r.startService(ctx); err != nil {
		r.stop()
		return nil, err
	}
	if err := r.register(ctx); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// restateBinary returns the restate-server binary under dir, installing
// the npm package there first when it is missing, and checks its version.
func restateBinary(ctx context.Context, dir string) (string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	bin := filepath.Join(dir, "node_modules", "@restatedev", "restate-server-"+runtime.GOOS+"-"+arch, "bin", "restate-server")
	if _, err := os.Stat(bin); err != nil {
		progress("peers: installing @restatedev/restate-server@%s into %s with npm", restateVersion, dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "@restatedev/restate-server@"+restateVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("npm install @restatedev/restate-server@%s: %w\n%s", restateVersion, err, out)
		}
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	if !strings.Contains(string(out), restateVersion) {
		return "", fmt.Errorf("%s is %q, the comparison is written for %s: remove %s to reinstall", bin, strings.TrimSpace(string(out)), restateVersion, dir)
	}
	return bin, nil
}

func (r *restatePeer) startServer(ctx context.Context, bin, node, base string) error {
	cmd := exec.Command(bin, "--base-dir", base, "--bind-address", node, "--listen-mode", "tcp", "--no-logo", "--node-name", "bench")
	cmd.Env = append(os.Environ(), "RESTATE_INGRESS__BIND_ADDRESS="+r.ingress, "RESTATE_ADMIN__BIND_ADDRESS="+r.admin,
		"RESTATE_DISABLE_TELEMETRY=true", "RESTATE_LOG_FILTER=warn")
	var err error
	if r.server, err = startExt("restate-server", cmd, filepath.Join(r.logDir, "restate-server.log")); err != nil {
		return err
	}
	if err := r.server.waitUntil(ctx, "admin health", func() bool { return httpOK("http://" + r.admin + "/health") }); err != nil {
		return err
	}
	return r.server.waitUntil(ctx, "ingress health", func() bool { return httpOK("http://" + r.ingress + "/restate/health") })
}

// startService starts (or, after a kill, restarts) the service and waits
// until it listens.
func (r *restatePeer) startService(ctx context.Context) error {
	cmd := exec.Command(r.svcBin, "--addr", r.svcAddr, "--tool", r.toolURL)
	var err error
	r.svc, err = startExt("restatesvc", cmd, filepath.Join(r.logDir, fmt.Sprintf("restatesvc-%d.log", r.restarts)))
	if err != nil {
		return err
	}
	return r.svc.waitUntil(ctx, "listener", func() bool { return listening(r.svcAddr) })
}

// register registers the service's deployment with the admin API and
// waits until Restate lists the service.
func (r *restatePeer) register(ctx context.Context) error {
	hc := &http.Client{}
	rep, err := postJSON(ctx, hc, "http://"+r.admin+"/deployments", []byte(`{"uri":"http://`+r.svcAddr+`"}`), nil)
	if err != nil {
		return fmt.Errorf("restate: register deployment: %w", err)
	}
	if rep.code != http.StatusCreated && rep.code != http.StatusOK {
		return fmt.Errorf("restate: register deployment: %d %.300s", rep.code, rep.body)
	}
	return r.server.waitUntil(ctx, "service "+restateService, func() bool { return httpOK("http://" + r.admin + "/services/" + restateService) })
}

func (r *restatePeer) name() string { return peerRestate }

func (r *restatePeer) procs() []proc {
	return []proc{{"restate-server", r.server.pid()}, {"service", r.svc.pid()}}
}

// call POSTs the ingress. Restate answers a call and its replays alike,
// 200 with the handler's output; it does not say which was a replay.
func (r *restatePeer) call(ctx context.Context, hc *http.Client, key string, n int) (callAnswer, error) {
	rep, err := postJSON(ctx, hc, "http://"+r.ingress+"/"+restateService+"/Call", callBody(key, n), map[string]string{"idempotency-key": key})
	if err != nil {
		return callAnswer{}, err
	}
	var out struct {
		OK bool `json:"ok"`
	}
	if rep.code != http.StatusOK || json.Unmarshal(rep.body, &out) != nil || !out.OK {
		return callAnswer{}, fmt.Errorf("restate answered %d: %.200s", rep.code, rep.body)
	}
	return callAnswer{status: "succeeded"}, nil
}

func (r *restatePeer) killTarget() string { return "service" }

// kill SIGKILLs the service, not the server: the process that runs the
// tool call, as the executor is on our side.
func (r *restatePeer) kill() { r.svc.kill() }

func (r *restatePeer) restart(ctx context.Context) error {
	r.restarts++
	return r.startService(ctx)
}

func (r *restatePeer) stop() {
	if r.svc != nil {
		_ = r.svc.stop(syscall.SIGTERM)
	}
	if r.server != nil {
		if err := r.server.stop(syscall.SIGTERM); err != nil {
			progress("peers: %v", err)
		}
	}
}
