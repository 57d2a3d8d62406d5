package main

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/internal/httpserve"
)

// listeners are the addresses the executor process serves, bound before
// anything slow starts (the embedded broker's log, the executor's
// restore, the reconciler's): a port in use ends the start at once, with
// the flag that moves it, instead of after the components already started
// were stopped again. A nil listener is an address not served.
type listeners struct {
	http       net.Listener // --http-addr: metrics and probes
	embedded   net.Listener // --embedded-addr, when the embedded broker runs
	reconciler net.Listener // --reconciler-http-addr, when the embedded reconciler runs and it is not empty
	gateway    net.Listener // --gateway-addr, when the embedded gateway runs
}

// bindListeners binds every address f serves, in the order a newcomer
// meets them; on a refusal it releases those bound already.
func bindListeners(f *runFlags) (*listeners, error) {
	ls := &listeners{}
	bind := func(ln *net.Listener, flag, addr, instead string) error {
		var err error
		if *ln, err = cli.Listen(flag, addr, instead); err != nil {
			ls.close()
		}
		return err
	}
	if err := bind(&ls.http, "--http-addr", f.httpAddr, ""); err != nil {
		return nil, err
	}
	if f.embedded() {
		if err := bind(&ls.embedded, "--embedded-addr", f.embeddedAddr, "or --brokers to use a running cluster"); err != nil {
			return nil, err
		}
	}
	if f.rec.on && f.rec.httpAddr != "" {
		if err := bind(&ls.reconciler, "--reconciler-http-addr", f.rec.httpAddr, "an empty one, or --reconciler=false when a reconciler runs elsewhere"); err != nil {
			return nil, err
		}
	}
	if f.gw.on {
		if err := bind(&ls.gateway, "--gateway-addr", f.gw.addr, "or --gateway=false"); err != nil {
			return nil, err
		}
	}
	return ls, nil
}

// close releases the listeners no server took over (closing a served one
// again is harmless).
func (ls *listeners) close() {
	for _, ln := range []net.Listener{ls.http, ls.embedded, ls.reconciler, ls.gateway} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// front is a server on a bound address that answers as a starting process
// does (httpserve.Starting: 503 "starting") until its component hands it
// its own handler: a client that comes during a long start learns why it
// gets no answer, instead of waiting on a connection that nothing reads.
type front struct {
	*httpserve.Handoff
	srv *http.Server
}

// fronts are the embedded reconciler's and gateway's; nil where the
// address is not served.
type fronts struct{ reconciler, gateway *front }

func serveStarting(ls *listeners, log *slog.Logger) *fronts {
	start := func(ln net.Listener) *front {
		if ln == nil {
			return nil
		}
		h := httpserve.Starting(nil)
		return &front{Handoff: h, srv: httpserve.Serve(ln, h, log)}
	}
	return &fronts{reconciler: start(ls.reconciler), gateway: start(ls.gateway)}
}

// close closes the servers at once; a component's own stop shuts its
// server down gracefully before.
func (fs *fronts) close() {
	for _, f := range []*front{fs.reconciler, fs.gateway} {
		if f != nil {
			_ = f.srv.Close()
		}
	}
}
