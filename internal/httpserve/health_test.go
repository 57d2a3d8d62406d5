package httpserve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func status(t *testing.T, h http.Handler, path string) int {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code
}

func TestHealth(t *testing.T) {
	var ready atomic.Bool
	h := Health(prometheus.NewRegistry(), ready.Load)
	if c := status(t, h, "/healthz"); c != http.StatusOK {
		t.Fatalf("/healthz %d", c)
	}
	if c := status(t, h, "/readyz"); c != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before ready: %d", c)
	}
	ready.Store(true)
	if c := status(t, h, "/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz when ready: %d", c)
	}
	if c := status(t, h, "/metrics"); c != http.StatusOK {
		t.Fatalf("/metrics %d", c)
	}
	if c := status(t, Health(nil, ready.Load), "/metrics"); c != http.StatusNotFound {
		t.Fatalf("/metrics without a registry: %d", c)
	}
}

func TestHandoffAnswersWhileStarting(t *testing.T) {
	s := Starting(prometheus.NewRegistry())
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusServiceUnavailable, "/metrics": http.StatusOK, "/pending": http.StatusServiceUnavailable} {
		if c := status(t, s, path); c != want {
			t.Errorf("starting: %s answered %d, want %d", path, c, want)
		}
	}
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, path := range []string{"/healthz", "/readyz", "/pending"} {
		if c := status(t, s, path); c != http.StatusTeapot {
			t.Errorf("after Serve: %s answered %d, not by the process's handler", path, c)
		}
	}
}

// The build info is one of the process metrics.
func TestProcessRegistryExportsTheBuild(t *testing.T) {
	mfs, err := ProcessRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "toolexec_build_info" {
			return
		}
	}
	t.Fatal("no toolexec_build_info")
}

func TestWatchFollowsTheCheck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fail atomic.Bool
	ready := Watch(ctx, "test", 10*time.Millisecond, time.Second, func(context.Context) error {
		if fail.Load() {
			return errors.New("down")
		}
		return nil
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	waitFor(t, ready, true)
	fail.Store(true)
	waitFor(t, ready, false)
	fail.Store(false)
	waitFor(t, ready, true)
}

func waitFor(t *testing.T, ready func() bool, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ready() != want {
		if time.Now().After(deadline) {
			t.Fatalf("ready stayed %v", !want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Watch is WatchLive without a liveness loop: the checks alone.
func Watch(ctx context.Context, what string, interval, timeout time.Duration, check func(context.Context) error, log *slog.Logger) func() bool {
	return watch(ctx, what, interval, timeout, check, log, func() {})
}
