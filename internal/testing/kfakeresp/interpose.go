package kfakeresp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Way is what becomes of one request that passes an Interposer.
type Way uint8

const (
	// Pass leaves the request and its answer alone.
	Pass Way = iota
	// Errored lets the broker apply the request and answers it with an
	// error code instead of the broker's own: a commit that happened whose
	// answer says it failed.
	Errored
	// Lost lets the broker apply the request and cuts the connection
	// instead of answering: the client never learns what happened.
	Lost
)

func (w Way) String() string {
	switch w {
	case Pass:
		return "pass"
	case Errored:
		return "applied_errored"
	case Lost:
		return "applied_lost"
	}
	return fmt.Sprintf("way(%d)", uint8(w))
}

// Verdict is what an Interposer does with one request.
type Verdict struct {
	Way  Way
	Code int16 // the error code an Errored answer carries
	// TopLevel sets only the answer's top-level error code (when it has
	// one); otherwise every error code below the top level is set (the
	// partitions', topics', groups'), or the top-level one when the
	// answer has nothing below it.
	TopLevel bool
	// Delay holds the request this long before the broker reads it, on
	// the connection's reading goroutine: the requests after it on the
	// same connection wait too, as behind a slow link. It combines with
	// any Way.
	Delay time.Duration
}

// Request is one request as the broker received it.
type Request struct {
	Addr     string       // the listener the client reached (one per kfake node)
	ClientID string       // the request header's client id ("" when null)
	Req      kmsg.Request // decoded, with its version set; never modified
}

// Decider chooses the verdict for each request. It runs on the
// connection's reading goroutine before the broker sees the request, so it
// must not block on the broker; it may be called concurrently for requests
// of different connections.
type Decider func(Request) Verdict

// Interposer stands between a kfake cluster and its clients and can change
// what the clients hear after the broker acted. kfake's own Fault API
// refuses a request before the broker applies it; an Interposer gives the
// two other answers a real broker or network can give: applied but
// answered with an error (Errored), and applied with the answer lost
// (Lost). Pass Listen to kfake with kfake.ListenFn; every node's listener
// is wrapped, so every connection of every client passes through it.
//
// It is safe for concurrent use. The zero value is not usable: use
// NewInterposer.
type Interposer struct {
	decide atomic.Pointer[Decider]
	counts sync.Map // countKey -> *atomic.Int64
}

type countKey struct {
	key int16
	way Way
}

// NewInterposer returns an Interposer that passes everything until Set.
func NewInterposer() *Interposer { return &Interposer{} }

// Set installs the decider; nil passes everything.
func (ip *Interposer) Set(d Decider) {
	if d == nil {
		ip.decide.Store(nil)
		return
	}
	ip.decide.Store(&d)
}

// Count is how many requests of the key the Interposer treated the given
// way (Pass counts every request that reached it).
func (ip *Interposer) Count(key int16, way Way) int64 {
	if c, ok := ip.counts.Load(countKey{key, way}); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

func (ip *Interposer) count(key int16, way Way) {
	c, _ := ip.counts.LoadOrStore(countKey{key, way}, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

func (ip *Interposer) verdict(r Request) Verdict {
	ip.count(r.Req.Key(), Pass)
	d := ip.decide.Load()
	if d == nil {
		return Verdict{}
	}
	v := (*d)(r)
	if v.Way != Pass {
		ip.count(r.Req.Key(), v.Way)
	}
	return v
}

// Listen is a kfake.ListenFn: net.Listen, with every accepted connection
// passing through the Interposer.
func (ip *Interposer) Listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &listener{Listener: ln, ip: ip}, nil
}

type listener struct {
	net.Listener
	ip *Interposer
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, ip: l.ip, addr: l.Addr().String(), pending: make(map[int32]pendingAnswer)}, nil
}

// pendingAnswer is what the reading side decided for a request whose
// answer the broker has not written yet.
type pendingAnswer struct {
	key, version int16
	verdict      Verdict
}

// conn reads whole request frames from the client before handing them to
// the broker (kfake reads a size, then a body, so it never asks for more
// than one frame), and collects whole answer frames from the broker before
// deciding their fate. kfake answers the requests of one connection in
// order and writes each answer with one Write, but the collection does not
// rely on that.
type conn struct {
	net.Conn
	ip   *Interposer
	addr string

	in []byte // the rest of the request frame the broker is reading

	mu      sync.Mutex
	pending map[int32]pendingAnswer // by correlation id
	out     []byte                  // answer bytes not yet a whole frame
}

var errAnswerLost = errors.New("kfakeresp: answer withheld (Lost)")

func (c *conn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		frame, err := readFrame(c.Conn)
		if err != nil {
			return 0, err
		}
		if d := c.note(frame); d > 0 {
			time.Sleep(d)
		}
		c.in = frame
	}
	n := copy(p, c.in)
	c.in = c.in[n:]
	return n, nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// note decodes a request frame, remembers its verdict and returns how
// long to hold the request. A frame it cannot decode passes untouched: the
// broker will refuse it on its own.
func (c *conn) note(frame []byte) time.Duration {
	rd := kbin.Reader{Src: frame[4:]}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	var clientID string
	if id := rd.NullableString(); id != nil {
		clientID = *id
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return 0
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if !rd.Ok() || req.ReadFrom(rd.Src) != nil {
		return 0
	}
	v := c.ip.verdict(Request{Addr: c.addr, ClientID: clientID, Req: req})
	if v.Way == Pass {
		return v.Delay
	}
	c.mu.Lock()
	c.pending[corr] = pendingAnswer{key: key, version: version, verdict: v}
	c.mu.Unlock()
	return v.Delay
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out = append(c.out, p...)
	for len(c.out) >= 8 {
		n := 4 + int(binary.BigEndian.Uint32(c.out[:4]))
		if len(c.out) < n {
			break
		}
		frame := c.out[:n:n]
		c.out = c.out[n:]
		corr := int32(binary.BigEndian.Uint32(frame[4:8]))
		pa, ok := c.pending[corr]
		delete(c.pending, corr)
		c.mu.Unlock()
		if err := c.answer(frame, pa, ok); err != nil {
			return 0, err
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return len(p), nil
}

// answer writes one answer frame as its verdict says. Writes of one
// connection come from kfake's one writing goroutine, so frames keep their
// order.
func (c *conn) answer(frame []byte, pa pendingAnswer, decided bool) error {
	if !decided {
		_, err := c.Conn.Write(frame)
		return err
	}
	switch pa.verdict.Way {
	case Lost:
		_ = c.Conn.Close()
		return errAnswerLost
	case Errored:
		rewritten, err := rewrite(frame, pa)
		if err != nil {
			_, err = c.Conn.Write(frame) // an answer we cannot decode goes out as it is
			return err
		}
		_, err = c.Conn.Write(rewritten)
		return err
	}
	_, err := c.Conn.Write(frame)
	return err
}

// rewrite decodes an answer, sets its error codes and encodes it again
// with the same header (size, correlation id, tags of a flexible header:
// ApiVersions, key 18, never has them).
func rewrite(frame []byte, pa pendingAnswer) ([]byte, error) {
	resp := kmsg.ResponseForKey(pa.key)
	if resp == nil {
		return nil, fmt.Errorf("kfakeresp: no response for key %d", pa.key)
	}
	resp.SetVersion(pa.version)
	header := 8
	if resp.IsFlexible() && pa.key != 18 {
		header++
	}
	if len(frame) < header {
		return nil, io.ErrUnexpectedEOF
	}
	if err := resp.ReadFrom(frame[header:]); err != nil {
		return nil, err
	}
	SetErrorCodes(resp, pa.verdict.Code, pa.verdict.TopLevel)
	out := append([]byte(nil), frame[:header]...)
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out[:4], uint32(len(out)-4))
	return out, nil
}

// SetErrorCodes sets the error codes of a decoded answer: with topLevel,
// the answer's own ErrorCode field when it has one; otherwise every
// ErrorCode field below the top level (topics, partitions, groups,
// members), or the top-level one when there is none below. It reports how
// many fields it set.
func SetErrorCodes(resp kmsg.Response, code int16, topLevel bool) int {
	v := reflect.ValueOf(resp).Elem()
	top := v.FieldByName("ErrorCode")
	hasTop := top.IsValid() && top.Kind() == reflect.Int16
	if topLevel && hasTop {
		top.SetInt(int64(code))
		return 1
	}
	n := 0
	for i := 0; i < v.NumField(); i++ {
		n += setNested(v.Field(i), code)
	}
	if n == 0 && hasTop {
		top.SetInt(int64(code))
		n = 1
	}
	return n
}

func setNested(v reflect.Value, code int16) int {
	switch v.Kind() {
	case reflect.Slice:
		n := 0
		for i := 0; i < v.Len(); i++ {
			n += setNested(v.Index(i), code)
		}
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return setNested(v.Elem(), code)
	case reflect.Struct:
		n := 0
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if v.Type().Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				f.SetInt(int64(code))
				n++
				continue
			}
			n += setNested(f, code)
		}
		return n
	}
	return 0
}
