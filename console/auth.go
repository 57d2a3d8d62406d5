package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/atmostonce/toolexec/internal/httpserve"
)

// Cookies: the session, and the sign-in form's own CSRF value (before a
// session exists, a forged sign-in could sign a browser in as someone
// else).
const (
	sessionCookie = "toolexec_console"
	signinCookie  = "toolexec_console_signin"
)

// operator is who makes a request: by a session cookie, or by a bearer
// token (scripts; such requests need no CSRF token, since a browser never
// adds the header by itself).
type operator struct {
	name string
	sess *session // nil for a bearer token
}

// Name is the operator's name in the operators file.
func (o operator) Name() string { return o.name }

// CSRF is the token the page's forms carry ("" for a bearer request).
func (o operator) CSRF() string {
	if o.sess == nil {
		return ""
	}
	return o.sess.csrf
}

// authFailure says why a request has no operator.
type authFailure int

const (
	authOK        authFailure = iota
	authNone                  // no credential: a browser is sent to sign in
	authBadBearer             // a bearer token that is no operator's (a tenant's, say)
	authEnded                 // a session that expired or whose token left the operators file
)

// identify finds the request's operator. A session stays valid only while
// its token's hash is in the operators file in force: a reload that drops
// the token ends it here, at its next request.
func (c *Console) identify(r *http.Request) (operator, authFailure) {
	op, why := c.identified(r)
	if why == authOK {
		httpserve.Authenticated(r) // an operator's connection may stay open
	}
	return op, why
}

func (c *Console) identified(r *http.Request) (operator, authFailure) {
	ops := c.cfg.Operators.Current()
	if h := r.Header.Get("Authorization"); h != "" {
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return operator{}, authBadBearer
		}
		name, _, ok := ops.Lookup(strings.TrimSpace(token))
		if !ok {
			return operator{}, authBadBearer
		}
		return operator{name: name}, authOK
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return operator{}, authNone
	}
	ss := c.sess.get(ck.Value, c.cfg.Now())
	if ss == nil {
		return operator{}, authEnded
	}
	if !ops.Holds(ss.token, ss.operator) {
		c.sess.end(ss.id)
		c.cfg.Logger.Info("console: session ended: its token is no longer in the operators file", "operator", ss.operator)
		return operator{}, authEnded
	}
	return operator{name: ss.operator, sess: ss}, authOK
}

// page wraps a page: without an operator, a browser is sent to sign in
// (and comes back after), a bad bearer token gets 401.
func (c *Console) page(h func(http.ResponseWriter, *http.Request, operator)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		op, why := c.identify(r)
		switch why {
		case authOK:
			h(w, r, op)
		case authBadBearer:
			c.unauthorized(w)
		default:
			q := url.Values{"next": {r.URL.RequestURI()}}
			if why == authEnded {
				q.Set("ended", "1")
			}
			http.Redirect(w, r, "/console/signin?"+q.Encode(), http.StatusSeeOther)
		}
	}
}

// action wraps a form's POST: it needs an operator, and a session's form
// must carry the session's CSRF token. Nothing is redirected: a refused
// action says why.
func (c *Console) action(h func(http.ResponseWriter, *http.Request, operator)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		op, why := c.identify(r)
		if why != authOK {
			c.unauthorized(w)
			return
		}
		if err := r.ParseForm(); err != nil {
			c.fail(w, http.StatusBadRequest, "the form could not be read: "+err.Error())
			return
		}
		if op.sess != nil && !op.sess.csrfOK(r.PostForm.Get("csrf")) {
			c.cfg.Logger.Warn("console: a form without the session's CSRF token was refused", "operator", op.name, "path", r.URL.Path)
			c.fail(w, http.StatusForbidden, "this form does not carry your session's CSRF token (a forged request, or a page from an older session): reload the page and try again")
			return
		}
		h(w, r, op)
	}
}

func (c *Console) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="toolexec console"`)
	c.fail(w, http.StatusUnauthorized, "sign in with an operator's token (a tenant's gateway token is not one)")
}

type signinData struct {
	CSRF, Next, Problem string
}

// signinForm shows the sign-in form, with a fresh CSRF value in a cookie
// and in the form.
func (c *Console) signinForm(w http.ResponseWriter, r *http.Request) {
	d := signinData{Next: safeNext(r.URL.Query().Get("next")), CSRF: randomToken()}
	if r.URL.Query().Get("ended") != "" {
		d.Problem = "Your session ended (it expired, or its token was removed from the operators file). Sign in again."
	}
	c.setCookie(w, r, signinCookie, d.CSRF, 600)
	c.render(w, http.StatusOK, "signin", d)
}

// signin checks the token, starts a session and sets its cookie. The
// token comes from the form, or as a bearer token (signinBearer).
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		c.signinBearer(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.fail(w, http.StatusBadRequest, "the form could not be read")
		return
	}
	ck, err := r.Cookie(signinCookie)
	got := r.PostForm.Get("csrf")
	if err != nil || got == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(got)) != 1 {
		c.fail(w, http.StatusForbidden, "the sign-in form's CSRF token is missing or forged: open the sign-in page again")
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	name, h, ok := c.cfg.Operators.Current().Lookup(strings.TrimSpace(r.PostForm.Get("token")))
	if !ok {
		d := signinData{Next: next, CSRF: randomToken(), Problem: "That token is no operator's (a tenant's gateway token is not one)."}
		c.setCookie(w, r, signinCookie, d.CSRF, 600)
		c.render(w, http.StatusUnauthorized, "signin", d)
		return
	}
	ss := c.sess.start(name, h, c.cfg.Now())
	c.setCookie(w, r, sessionCookie, ss.id, int(sessionMax.Seconds()))
	c.setCookie(w, r, signinCookie, "", -1)
	c.cfg.Logger.Info("console: operator signed in", "operator", name)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signinBearer signs in the operator whose token the request carries as
// a bearer token: a script's sign-in, whose session cookie it can hand to
// a browser (a headless one cannot send the header on every request by
// itself). It needs no CSRF value: a browser never adds the header by
// itself, so no other site can make one sign in this way.
func (c *Console) signinBearer(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		c.unauthorized(w)
		return
	}
	name, h, ok := c.cfg.Operators.Current().Lookup(strings.TrimSpace(token))
	if !ok {
		c.unauthorized(w)
		return
	}
	ss := c.sess.start(name, h, c.cfg.Now())
	c.setCookie(w, r, sessionCookie, ss.id, int(sessionMax.Seconds()))
	c.cfg.Logger.Info("console: operator signed in with a bearer token", "operator", name)
	http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, op operator) {
	if op.sess != nil {
		c.sess.end(op.sess.id)
	}
	c.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, scoped to
// /console, Secure behind TLS. maxAge < 0 deletes it.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r)})
}

// safeNext keeps a sign-in's return address on the console: a path under
// /console, never another host.
func safeNext(next string) string {
	if next == "/console" || (strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "/console?")) && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/console"
}
