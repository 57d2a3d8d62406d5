package httpserve

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

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
