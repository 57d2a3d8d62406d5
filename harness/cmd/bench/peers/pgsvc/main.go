// Command pgsvc is the PostgreSQL side of the bench's peer comparison
// (harness/cmd/bench --peer postgres): the idempotency table most teams write by
// hand, as plainly as such services are written. Per call of
// POST /call with an Idempotency-Key header, synchronously and one call at
// a time per request (no batching), over a connection pool:
//
//  1. INSERT a pending row ... ON CONFLICT (key) DO NOTHING;
//  2. if the row existed: its stored response when completed (200,
//     Idempotent-Replayed: true), else 409 "in progress";
//  3. else call the tool, UPDATE the row to completed with the response,
//     and answer 200.
//
// A tool error deletes the pending row (so that the caller may retry) and
// answers 502. A crash between 1 and 3 leaves the pending row behind: every
// retry of that key is answered 409 until someone deletes it, which is
// what such services do.
//
// It is a module of its own so that the product's module never depends on
// its driver; harness/cmd/bench builds it with `go build` at run time.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const schema = `CREATE TABLE IF NOT EXISTS idempotency (
	key          text PRIMARY KEY,
	status       text NOT NULL,
	request      bytea NOT NULL,
	response     bytea,
	created_at   timestamptz NOT NULL DEFAULT now(),
	completed_at timestamptz
)`

// maxBody bounds a request or tool answer read.
const maxBody = 1 << 16

type service struct {
	db   *pgxpool.Pool
	tool string
	hc   *http.Client
}

func (s *service) call(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > 256 {
		http.Error(w, `{"error":"Idempotency-Key: required, at most 256 bytes"}`, http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, `{"error":"read body"}`, http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	tag, err := s.db.Exec(ctx, `INSERT INTO idempotency (key, status, request) VALUES ($1, 'pending', $2) ON CONFLICT (key) DO NOTHING`, key, body)
	if err != nil {
		internal(w, err)
		return
	}
	if tag.RowsAffected() == 0 {
		s.existing(ctx, w, key)
		return
	}
	s.execute(ctx, w, key, body)
}

// existing answers a key whose row was there already.
func (s *service) existing(ctx context.Context, w http.ResponseWriter, key string) {
	var status string
	var response []byte
	err := s.db.QueryRow(ctx, `SELECT status, response FROM idempotency WHERE key = $1`, key).Scan(&status, &response)
	switch {
	case errors.Is(err, pgx.ErrNoRows): // deleted after a tool error since the INSERT
		http.Error(w, `{"error":"retry"}`, http.StatusConflict)
	case err != nil:
		internal(w, err)
	case status == "completed":
		answer(w, response, true)
	default:
		http.Error(w, `{"error":"in progress"}`, http.StatusConflict)
	}
}

// execute calls the tool for a key whose pending row this request wrote.
func (s *service) execute(ctx context.Context, w http.ResponseWriter, key string, body []byte) {
	response, err := s.callTool(ctx, key, body)
	if err != nil {
		_, _ = s.db.Exec(context.WithoutCancel(ctx), `DELETE FROM idempotency WHERE key = $1 AND status = 'pending'`, key)
		http.Error(w, fmt.Sprintf(`{"error":%q}`, err.Error()), http.StatusBadGateway)
		return
	}
	if _, err := s.db.Exec(ctx, `UPDATE idempotency SET status = 'completed', response = $2, completed_at = now() WHERE key = $1`, key, response); err != nil {
		internal(w, err)
		return
	}
	answer(w, response, false)
}

func (s *service) callTool(ctx context.Context, key string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.tool, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tool answered %d", resp.StatusCode)
	}
	return data, nil
}

func answer(w http.ResponseWriter, response []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Idempotent-Replayed", fmt.Sprint(replayed))
	_, _ = w.Write(response)
}

func internal(w http.ResponseWriter, err error) {
	log.Printf("pgsvc: %v", err)
	http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "listen address")
	dsn := flag.String("dsn", "", "PostgreSQL connection string")
	tool := flag.String("tool", "", "the tool's URL")
	poolSize := flag.Int("pool", 32, "connections in the pool")
	flag.Parse()
	if *dsn == "" || *tool == "" {
		fmt.Fprintln(os.Stderr, "pgsvc: --dsn and --tool are required")
		os.Exit(2)
	}
	if err := run(*addr, *dsn, *tool, *poolSize); err != nil {
		fmt.Fprintln(os.Stderr, "pgsvc:", err)
		os.Exit(1)
	}
}

func run(addr, dsn, tool string, poolSize int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(poolSize)
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(ctx, schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	s := &service{db: db, tool: tool, hc: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", s.call)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
