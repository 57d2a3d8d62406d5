package httpserve

import (
	"net"
	"net/http"
	"sync"
	"syscall"
)

// DefaultMaxConns is the connection cap of each listener: a quarter of
// the process's file descriptor limit (RLIMIT_NOFILE), between 64 and
// 4,096. Why a quarter: a process has up to three listeners (the
// executor's, the embedded gateway's, the reconciler's), and its Kafka
// clients, Pebble and the embedded broker need descriptors too, so a
// flood of connections on one listener cannot take the descriptors an
// answer needs (accept4: too many open files). Why 4,096 at most: an idle
// connection costs its buffers and a goroutine (about 20 KB); that many
// serve any agent fleet's kept-alive connections per instance.
func DefaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	return int(min(max(rl.Cur/4, 64), 4096))
}

// capListener is a listener that holds at most max connections open.
// When it is full, it closes the connection idle for longest (a
// kept-alive one between requests) to make room; when none is idle, it
// accepts nothing until one closes or goes idle: the waiting connections
// stay in the kernel's backlog, which costs the process no descriptor.
// The server's ConnState must be its track method. Safe for concurrent
// use.
type capListener struct {
	net.Listener
	max int

	mu     sync.Mutex
	cond   *sync.Cond
	conns  map[net.Conn]bool // open connections: true while idle
	idle   []net.Conn        // idle ones, longest idle first
	closed bool
}

func newCapListener(ln net.Listener, max int) *capListener {
	l := &capListener{Listener: ln, max: max, conns: map[net.Conn]bool{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// Accept waits for room, closing the longest idle connection when there
// is one, then accepts the next connection.
func (l *capListener) Accept() (net.Conn, error) {
	if err := l.room(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns[c] = false
	return c, nil
}

// room returns once fewer than max connections are open, or the
// listener is closed.
func (l *capListener) room() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.conns) >= l.max && !l.closed {
		if len(l.idle) == 0 {
			l.cond.Wait()
			continue
		}
		c := l.idle[0]
		l.forgetLocked(c)
		_ = c.Close() // the server sees it closed when it next reads
	}
	if l.closed {
		return net.ErrClosed
	}
	return nil
}

// track follows each connection's state (http.Server.ConnState).
func (l *capListener) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[c]; !ok {
		return
	}
	switch state {
	case http.StateIdle:
		l.conns[c] = true
		l.idle = append(l.idle, c)
	case http.StateActive:
		l.conns[c] = false
		l.dropIdleLocked(c)
	case http.StateClosed, http.StateHijacked:
		l.forgetLocked(c)
	}
	l.cond.Broadcast()
}

func (l *capListener) forgetLocked(c net.Conn) {
	delete(l.conns, c)
	l.dropIdleLocked(c)
	l.cond.Broadcast()
}

func (l *capListener) dropIdleLocked(c net.Conn) {
	for i, x := range l.idle {
		if x == c {
			l.idle = append(l.idle[:i], l.idle[i+1:]...)
			return
		}
	}
}

// Close stops accepting; an Accept waiting for room returns.
func (l *capListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}
