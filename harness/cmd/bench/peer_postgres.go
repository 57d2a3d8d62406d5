package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// postgresPeer is the dedup table most teams write by hand: PostgreSQL
// (Debian's package) in a temporary directory, with fsync and
// synchronous_commit at their defaults (on), and the Go service of
// peers/pgsvc in front of it. Calls go to POST /call with an
// Idempotency-Key header.
type postgresPeer struct {
	pg, svc  *extProc
	dir      string // the cluster's directory; removed by stop
	dsn      string
	svcAddr  string
	svcBin   string
	toolURL  string
	pool     int
	logDir   string
	restarts int
}

// pgUser runs the server when the bench runs as root, which PostgreSQL
// refuses: Debian's package creates it.
const pgUser = "postgres"

func (b *bench) startPostgres(ctx context.Context, tool *effectTool, pa *ports) (*postgresPeer, error) {
	p := &postgresPeer{toolURL: tool.url(), pool: b.cfg.httpClients, logDir: b.dir}
	var err error
	if p.svcBin, err = buildPeerService(ctx, b.cfg.peer.src, "pgsvc", b.dir); err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	if p.dir, err = pgDir(cred); err != nil {
		return nil, err
	}
	pgAddr, err := pa.addr()
	if err != nil {
		return nil, err
	}
	if p.svcAddr, err = pa.addr(); err != nil {
		return nil, err
	}
	if err := p.initdb(ctx, b.cfg.peer.pgBin, cred); err != nil {
		p.stop()
		return nil, err
	}
	if err := p.startServer(ctx, b.cfg.peer.pgBin, cred, pgAddr); err != nil {
		p.stop()
		return nil, err
	}
	if err := p.startService(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// pgCredential is nil when the bench is not root, else the postgres user.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(pgUser)
	if err != nil {
		return nil, fmt.Errorf("postgres: running as root needs the user %q (Debian's postgresql package creates it): %w", pgUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// pgDir is a fresh temporary directory owned by the server's user.
func pgDir(cred *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", "toolexec-bench-pg-")
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func (p *postgresPeer) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(p.dir, "data"), "-U", "bench", "--auth=trust", "-E", "UTF8", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// pgReservedConns are the server's connections beyond the service's pool:
// its superuser reserve (3 by default) and a margin for the pool's
// reconnects after the crash test's kill.
const pgReservedConns = 20

func (p *postgresPeer) startServer(ctx context.Context, bin string, cred *syscall.Credential, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	// The service's pool holds one connection per client (--http-clients),
	// and the server must admit them all: with more clients than
	// max_connections, the calls beyond it fail with "too many clients".
	maxConns := max(200, p.pool+pgReservedConns)
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(p.dir, "data"), "-p", port, "-k", p.dir,
		"-c", "listen_addresses="+host, "-c", fmt.Sprintf("max_connections=%d", maxConns))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if p.pg, err = startExt("postgres", cmd, filepath.Join(p.logDir, "postgres.log")); err != nil {
		return err
	}
	p.dsn = "postgres://bench@" + addr + "/postgres?sslmode=disable"
	ready := func() bool {
		return exec.CommandContext(ctx, filepath.Join(bin, "pg_isready"), "-q", "-h", host, "-p", port).Run() == nil
	}
	return p.pg.waitUntil(ctx, "pg_isready", ready)
}

// startService starts (or, after a kill, restarts) the service; it
// creates its table and then listens.
func (p *postgresPeer) startService(ctx context.Context) error {
	cmd := exec.Command(p.svcBin, "--addr", p.svcAddr, "--dsn", p.dsn, "--tool", p.toolURL, "--pool", strconv.Itoa(p.pool))
	var err error
	p.svc, err = startExt("pgsvc", cmd, filepath.Join(p.logDir, fmt.Sprintf("pgsvc-%d.log", p.restarts)))
	if err != nil {
		return err
	}
	return p.svc.waitUntil(ctx, "listener", func() bool { return listening(p.svcAddr) })
}

func (p *postgresPeer) name() string { return peerPostgres }

func (p *postgresPeer) procs() []proc {
	// The postmaster's tree: its backends, and the time of those that
	// exited (cutime). The pool keeps its connections, so the backends
	// live through a phase.
	return []proc{{"postgres", p.pg.pid()}, {"service", p.svc.pid()}}
}

// call POSTs /call: 200 with Idempotent-Replayed, or 409 while the key's
// row is pending.
func (p *postgresPeer) call(ctx context.Context, hc *http.Client, key string, n int) (callAnswer, error) {
	rep, err := postJSON(ctx, hc, "http://"+p.svcAddr+"/call", callBody(key, n), map[string]string{"Idempotency-Key": key})
	switch {
	case err != nil:
		return callAnswer{}, err
	case rep.code == http.StatusOK:
		return callAnswer{status: "succeeded", replay: rep.header.Get("Idempotent-Replayed") == "true"}, nil
	case rep.code == http.StatusConflict:
		return callAnswer{status: statusInProgress}, nil
	}
	return callAnswer{}, fmt.Errorf("pgsvc answered %d: %.200s", rep.code, rep.body)
}

func (p *postgresPeer) killTarget() string { return "service" }

func (p *postgresPeer) kill() { p.svc.kill() }

func (p *postgresPeer) restart(ctx context.Context) error {
	p.restarts++
	return p.startService(ctx)
}

func (p *postgresPeer) stop() {
	if p.svc != nil {
		_ = p.svc.stop(syscall.SIGTERM)
	}
	if p.pg != nil {
		if err := p.pg.stop(syscall.SIGINT); err != nil { // SIGINT: fast shutdown
			progress("peers: %v", err)
		}
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}
