package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/reconciler"
)

// Config configures the console. Zero values take the defaults documented
// on each field.
type Config struct {
	// Operators may use the console; nil turns it off (every page says how
	// to turn it on).
	Operators *OperatorStore
	Backend   Backend // required when Operators is set
	// ExternalURL is where operators reach the console (for example
	// https://ops.example.com, behind a proxy); an https URL marks the
	// session cookie Secure. Default: the request's own scheme decides.
	ExternalURL string
	// ActionTimeout bounds the wait for the executor's answer to an
	// action; default 30s.
	ActionTimeout time.Duration
	Logger        *slog.Logger     // default slog.Default()
	Now           func() time.Time // default time.Now
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("console: invalid config")

// Bounds of the console's work: event-log scans for key pages at once
// (each reads a whole partition), and a form's size.
const (
	maxHistoryReads = 2
	historyTimeout  = 30 * time.Second
	maxFormBytes    = 1 << 20
)

// Console serves the operator console. Safe for concurrent use.
type Console struct {
	cfg      Config
	sess     *sessions
	pages    *pages
	historyQ chan struct{} // slots of maxHistoryReads
}

// New returns the console of cfg.
func New(cfg Config) (*Console, error) {
	if cfg.Operators != nil && cfg.Backend == nil {
		return nil, fmt.Errorf("%w: a backend is required", ErrConfig)
	}
	if cfg.ActionTimeout <= 0 {
		cfg.ActionTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Console{cfg: cfg, sess: newSessions(), pages: p, historyQ: make(chan struct{}, maxHistoryReads)}, nil
}

// On reports whether the console serves pages (an operators file is set).
func (c *Console) On() bool { return c.cfg.Operators != nil }

// Mount adds the console's routes to mux, under /console, and /pending
// (the reconciler's keys in doubt, as JSON) behind the same sign-in.
func (c *Console) Mount(mux *http.ServeMux) {
	h := func(f http.HandlerFunc) http.Handler { return secured(f) }
	mux.Handle("GET /console/static/{file}", h(c.static))
	mux.Handle("/pending", h(c.pending))
	if !c.On() {
		mux.Handle("/console", h(c.off))
		mux.Handle("/console/", h(c.off))
		return
	}
	mux.Handle("GET /console", h(c.page(c.list)))
	mux.Handle("GET /console/tools", h(c.page(c.toolsPage)))
	mux.Handle("GET /console/key", h(c.page(c.keyPage)))
	mux.Handle("POST /console/key", h(c.action(c.keyAction)))
	mux.Handle("GET /console/approvals", h(c.page(c.approvalsPage)))
	mux.Handle("GET /console/api/approvals", h(c.api(c.apiApprovals)))
	mux.Handle("POST /console/api/approvals", h(c.api(c.apiDecide)))
	mux.Handle("GET /console/signin", h(c.signinForm))
	mux.Handle("POST /console/signin", h(c.signin))
	mux.Handle("POST /console/signout", h(c.action(c.signout)))
	mux.Handle("/console/", h(c.notFound))
}

// secured sets the headers every console response carries: nothing is
// loaded from elsewhere, no page may be framed, nothing is cached.
func secured(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h(w, r)
	}
}

// pending serves the reconciler's rows (reconciler.WritePending) to an
// operator: every tenant's keys in doubt and their downstream keys are
// theirs to see, nobody else's. Without an operators file it is not
// served.
func (c *Console) pending(w http.ResponseWriter, r *http.Request) {
	switch {
	case !c.On():
		http.Error(w, "/pending is served to operators, behind the console's sign-in: start with --operators (docs/OPERATIONS.md)", http.StatusNotFound)
		return
	case r.Method != http.MethodGet:
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	if _, why := c.identify(r); why != authOK {
		c.unauthorized(w)
		return
	}
	reconciler.WritePending(w, c.cfg.Backend.Rows())
}

// off answers every console page while no operators file is set.
func (c *Console) off(w http.ResponseWriter, _ *http.Request) {
	c.render(w, http.StatusNotFound, "off", nil)
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.fail(w, http.StatusNotFound, "no such page: "+r.URL.Path)
}

// secure reports whether the session cookie must be Secure: the request
// came over TLS, or through a proxy that says it did, or the console is
// reached at an https URL.
func (c *Console) secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") ||
		strings.HasPrefix(strings.ToLower(c.cfg.ExternalURL), "https://")
}
