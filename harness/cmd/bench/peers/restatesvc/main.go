// Command restatesvc is the Restate side of the bench's peer comparison
// (harness/cmd/bench --peer restate): a Go service built with the Restate Go SDK
// whose one handler, Bench/Call, is a single restate.Run step that POSTs
// the call's arguments to the bench's HTTP tool, the tool our executor
// calls in the same run.
//
// It is a module of its own so that the product's module never depends on
// a peer's SDK; harness/cmd/bench builds it with `go build` at run time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	restate "github.com/restatedev/sdk-go"
	"github.com/restatedev/sdk-go/server"
)

// Args are the call's arguments: the key (for the tool's count of
// effects) and a number.
type Args struct {
	Key string `json:"key"`
	N   int    `json:"n"`
}

// Answer is the tool's answer, journaled by restate.Run.
type Answer struct {
	OK bool `json:"ok"`
}

// Bench is the service; its name in Restate is "Bench".
type Bench struct {
	tool string
	hc   *http.Client
}

// Call is the handler: one durable step around the tool call. Restate
// journals the step's result; a step interrupted before its result was
// journaled runs again when the invocation is retried (at least once).
func (b *Bench) Call(ctx restate.Context, in Args) (Answer, error) {
	return restate.Run(ctx, func(rc restate.RunContext) (Answer, error) {
		return b.callTool(rc, in)
	})
}

// maxAnswer bounds the tool's answer read.
const maxAnswer = 1 << 16

func (b *Bench) callTool(ctx context.Context, in Args) (Answer, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return Answer{}, restate.ToTerminalError(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.tool, bytes.NewReader(body))
	if err != nil {
		return Answer{}, restate.ToTerminalError(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", in.Key)
	resp, err := b.hc.Do(req)
	if err != nil {
		return Answer{}, err // retried by Restate
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Answer{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Answer{}, fmt.Errorf("tool answered %d: %.200s", resp.StatusCode, data)
	}
	var a Answer
	if err := json.Unmarshal(data, &a); err != nil {
		return Answer{}, restate.ToTerminalError(err)
	}
	return a, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9080", "listen address (HTTP/2 cleartext, as Restate calls it)")
	tool := flag.String("tool", "", "the tool's URL")
	flag.Parse()
	if *tool == "" {
		fmt.Fprintln(os.Stderr, "restatesvc: --tool is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Pool sized for the bench's crash test (100 calls inside the tool at
	// once) so that the client never queues.
	hc := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	srv := server.NewRestate().
		WithLogger(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), true).
		Bind(restate.Reflect(&Bench{tool: *tool, hc: hc}))
	if err := srv.Start(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "restatesvc:", err)
		os.Exit(1)
	}
}
