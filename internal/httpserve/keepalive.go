package httpserve

import (
	"context"
	"net/http"
	"sync/atomic"
)

// Authenticated marks r as made by a known caller (a tenant's token, an
// operator's session or token): its connection may be kept alive after
// the answer. A handler calls it once the credential checked out, before
// it writes the answer. Every other request's connection is closed after
// its answer (Connection: close): an unauthenticated client cannot hold
// a connection of the server between requests, where it would cost a
// descriptor and a goroutine for the idle timeout. Probes and scrapes,
// which do not authenticate, reconnect; their rate is a few a minute.
// Outside a server of Listen it does nothing.
func Authenticated(r *http.Request) {
	if m, ok := r.Context().Value(keepAliveKey{}).(*atomic.Bool); ok {
		m.Store(true)
	}
}

type keepAliveKey struct{}

// closeUnauthenticated wraps h: the answer to a request that no handler
// marked Authenticated asks for the connection to be closed.
func closeUnauthenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mark := new(atomic.Bool)
		r = r.WithContext(context.WithValue(r.Context(), keepAliveKey{}, mark))
		cw := &closeWriter{ResponseWriter: w, mark: mark}
		h.ServeHTTP(cw, r)
		cw.decide() // a handler that wrote nothing: the server writes the header now
	})
}

// closeWriter sets Connection: close on an unmarked request's answer, as
// its header is written.
type closeWriter struct {
	http.ResponseWriter
	mark    *atomic.Bool
	decided bool
}

func (c *closeWriter) decide() {
	if !c.decided {
		c.decided = true
		if !c.mark.Load() {
			c.ResponseWriter.Header().Set("Connection", "close")
		}
	}
}

func (c *closeWriter) WriteHeader(code int) {
	c.decide()
	c.ResponseWriter.WriteHeader(code)
}

func (c *closeWriter) Write(b []byte) (int, error) {
	c.decide()
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (Flush, deadlines): MCP streams through it.
func (c *closeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Flush lets callers that assert http.Flusher flush.
func (c *closeWriter) Flush() {
	c.decide()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
