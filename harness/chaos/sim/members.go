package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/topicadmin"
)

// disk is a data dir's file system: Pebble's, through errorfs, with a
// fault that can be switched on and off. It belongs to the dir, not to a
// member's life, so a member restarted on the dir meets the same disk.
type disk struct {
	failSyncs atomic.Bool // syncs of Pebble's log (the WAL) fail: a failing device
}

// MaybeError is errorfs's Injector. Only the WAL's syncs fail, and not
// those of a log rotation.
//
// Why only the commit path: there the store turns Pebble's fatal error
// into state.ErrBroken, and the member exits on its own. A failure
// anywhere else makes Pebble panic, which the product rightly does not
// recover (a process crash, restarted by its supervisor) but which ends a
// simulation whose members share one process. Pebble (v1.1.5) panics on
// a failed rotation (rotateWAL closes the old log, syncing it, and panics
// with the error while it holds the DB's lock), and in a
// background flush or compaction. Writes are not failed at all: the log's
// writes happen on its flush goroutine, where a rotation's last write (the
// old log's end trailer) cannot be told from a commit's, and a failed one
// panics the rotation after it. A sync that fails makes the commit waiting
// on it fail just the same.
func (d *disk) MaybeError(op errorfs.Op, path string) error {
	if !strings.HasSuffix(path, ".log") || op != errorfs.OpFileSync || !d.failSyncs.Load() {
		return nil
	}
	if inRotation() {
		return nil
	}
	return errorfs.ErrInjected
}

// syncFS fails the WAL's data syncs, which errorfs (Pebble v1.1.5) does
// not route to its injector: Pebble syncs its log with SyncData, and
// errorfs's SyncData passes straight through. Without it the simulation's
// sync faults never reached a commit.
type syncFS struct {
	vfs.FS
	d *disk
}

func (fs syncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(f, name, err)
}

func (fs syncFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(f, newname, err)
}

func (fs syncFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return syncFile{File: f, d: fs.d, name: name}, nil
}

type syncFile struct {
	vfs.File
	d    *disk
	name string
}

func (f syncFile) SyncData() error {
	if err := f.d.MaybeError(errorfs.OpFileSync, f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

// fs is the dir's file system with the disk's faults.
func (d *disk) fs(base vfs.FS) vfs.FS {
	return syncFS{FS: errorfs.Wrap(base, d), d: d}
}

// inRotation reports whether the caller runs inside Pebble's rotateWAL:
// the old log's closing sync runs on the committing goroutine.
func inRotation() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".(*DB).rotateWAL") {
			return true
		}
		if !more {
			return false
		}
	}
}

// member is one life of an executor in the simulation's process.
type member struct {
	name   string
	dir    string
	disk   *disk
	ex     *executor.Executor
	cancel context.CancelFunc
	done   chan error // Run's error, once
	ended  atomic.Bool
}

// fleet starts, stops and crashes the members, and reaps those whose Run
// ended on its own. Safe for concurrent use.
type fleet struct {
	w *world

	mu      sync.Mutex
	running []*member
	stopped []string // data dirs of members no longer running
	disks   map[string]*disk
	lives   int
	exits   map[string]int // why a member's Run ended on its own
	aborted int            // transactions the ended lives aborted
	wg      sync.WaitGroup // members being stopped
}

func newFleet(w *world) *fleet {
	return &fleet{w: w, disks: map[string]*disk{}, exits: map[string]int{}}
}

// start runs a member on dir ("" for a new one). It fails when the
// member cannot start (its broker requests may be faulted): counted, and
// the dir is kept for a later start.
func (f *fleet) start(ctx context.Context, dir string) error {
	f.mu.Lock()
	f.lives++
	name := fmt.Sprintf("m%d", f.lives)
	if dir == "" {
		dir = filepath.Join(f.w.dir, "data", name)
	}
	d := f.disks[dir]
	if d == nil {
		d = &disk{}
		f.disks[dir] = d
	}
	f.mu.Unlock()
	m := &member{name: name, dir: dir, disk: d, done: make(chan error, 1)}
	cfg := f.w.memberConfig(m)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ex, err := executor.New(sctx, cfg)
	cancel()
	if err != nil {
		f.mu.Lock()
		f.stopped = append(f.stopped, dir)
		f.exits["start failed: "+reason(err)]++
		f.mu.Unlock()
		return err
	}
	m.ex = ex
	rctx, stop := context.WithCancel(context.Background())
	m.cancel = stop
	go func() { m.done <- ex.Run(rctx) }()
	f.mu.Lock()
	f.running = append(f.running, m)
	f.mu.Unlock()
	f.w.logf("%s started on %s", name, filepath.Base(dir))
	return nil
}

// memberConfig is a member's configuration: the run's parameters, its
// dir and disk, its hooks, its name as the client id of every Kafka
// client it makes.
func (w *world) memberConfig(m *member) executor.Config {
	return executor.Config{
		Brokers: w.brokers, Names: w.names, Group: w.group, DataDir: m.dir, Tools: w.reg,
		MaxInFlight: w.p.MaxInFlight, MaxPollRecords: w.p.MaxPollRecords,
		SessionTimeout: w.p.SessionTimeout, DrainTimeout: w.p.DrainTimeout, RebalanceTimeout: w.p.DrainTimeout + 5*time.Second,
		TransactionTimeout: w.p.TxnTimeout, SnapshotInterval: w.p.SnapshotInterval, SweepInterval: 2 * time.Second,
		BrokerOutage: 20 * time.Second, AllowWeakDurability: true,
		Settings:      topicadmin.Settings{Partitions: w.p.Partitions},
		StateFS:       m.disk.fs(vfs.Default),
		Logger:        w.log.With("member", m.name),
		KafkaLogLevel: kafkaLogLevel(),
		Hooks:         w.owners.hooks(m.name),
		Connect:       []kgo.Opt{kgo.ClientID(m.name)},
	}
}

// kafkaLogLevel is franz-go's log level in the members' logs: warnings,
// or what SIM_KAFKA_LOG asks for (info, debug) when replaying a seed to
// see the client's own account (a failed producer id, a session's rewind).
func kafkaLogLevel() kgo.LogLevel {
	switch os.Getenv("SIM_KAFKA_LOG") {
	case "info":
		return kgo.LogLevelInfo
	case "debug":
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelWarn
}

// reason is an error's first clause, for counting exits by kind.
func reason(err error) string {
	s := err.Error()
	if i := strings.IndexAny(s, ":("); i > 0 && i < 80 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// reap collects the members whose Run ended on its own: a fatal error (a
// broken disk, a broker outage longer than BrokerOutage), or a bug. It
// returns how many did.
func (f *fleet) reap() (exited int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.running[:0]
	for _, m := range f.running {
		select {
		case err := <-m.done:
			m.ended.Store(true)
			f.aborted += abortedOf(m)
			// Close cancels the calls' context before it leaves the
			// group: a call the dispatcher starts from then on (a queued
			// one taking the slot of a call that returned cancelled)
			// reaches no tool, though its start may be told after the
			// release that leaving the group tells.
			f.w.owners.abandon(m.name)
			m.ex.Close()
			f.stopped = append(f.stopped, m.dir)
			why := "returned nil"
			if err != nil {
				why = reason(err)
			}
			f.exits[why]++
			exited++
			f.w.logf("%s exited on its own: %v", m.name, err)
		default:
			kept = append(kept, m)
		}
	}
	f.running = kept
	return exited
}

// take removes a member chosen by pick from the running ones.
func (f *fleet) take(pick func(n int) int) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.running) == 0 {
		return nil
	}
	i := pick(len(f.running))
	m := f.running[i]
	f.running = append(f.running[:i], f.running[i+1:]...)
	return m
}

// takeNamed removes the running member of that name, if there is one.
func (f *fleet) takeNamed(name string) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.running {
		if m.name == name {
			f.running = append(f.running[:i], f.running[i+1:]...)
			return m
		}
	}
	return nil
}

// leave shuts a member down gracefully, in the background: Run drains
// and returns, Close leaves the group.
func (f *fleet) leave(m *member) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		m.cancel()
		err := <-m.done
		n := abortedOf(m)
		m.ex.Close()
		f.mu.Lock()
		f.aborted += n
		f.mu.Unlock()
		if err != nil && !errors.Is(err, context.Canceled) {
			f.w.logf("%s left with %v", m.name, err)
		}
		f.mu.Lock()
		f.stopped = append(f.stopped, m.dir)
		f.mu.Unlock()
	}()
}

// crash abandons a member as kill -9 would; wipe loses its data dir too.
func (f *fleet) crash(m *member, wipe bool) {
	f.w.owners.abandon(m.name)
	m.ex.Crash()
	m.cancel()
	<-m.done
	n := abortedOf(m)
	m.ex.Close()
	f.mu.Lock()
	f.aborted += n
	f.mu.Unlock()
	if wipe {
		_ = os.RemoveAll(m.dir)
		return
	}
	f.mu.Lock()
	f.stopped = append(f.stopped, m.dir)
	f.mu.Unlock()
}

// stoppedDir takes a stopped member's dir, or "" for a new one.
func (f *fleet) stoppedDir(pick func(n int) int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.stopped) == 0 {
		return ""
	}
	i := pick(len(f.stopped))
	d := f.stopped[i]
	f.stopped = append(f.stopped[:i], f.stopped[i+1:]...)
	return d
}

func (f *fleet) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.running)
}

// members returns the running members.
func (f *fleet) members() []*member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*member(nil), f.running...)
}

// heal clears every disk fault, waits for the members being stopped, and
// starts members until want run.
func (f *fleet) heal(ctx context.Context, want int) {
	f.mu.Lock()
	for _, d := range f.disks {
		d.failSyncs.Store(false)
	}
	f.mu.Unlock()
	f.wg.Wait()
	for attempt := 0; f.count() < want && attempt < 20 && ctx.Err() == nil; attempt++ {
		f.reap()
		if err := f.start(ctx, f.stoppedDir(func(int) int { return 0 })); err != nil {
			f.w.logf("start during the heal: %v", err)
			time.Sleep(time.Second)
		}
	}
}

// stopAll shuts every running member down gracefully and waits.
func (f *fleet) stopAll() {
	for m := f.take(func(int) int { return 0 }); m != nil; m = f.take(func(int) int { return 0 }) {
		f.leave(m)
	}
	f.wg.Wait()
}

// exitCounts copies why members exited on their own.
func (f *fleet) exitCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.exits))
	for k, v := range f.exits {
		out[k] = v
	}
	return out
}

// abortedOf is how many transactions a member's life aborted.
func abortedOf(m *member) int {
	return int(counterValue(m.ex.Metrics().Txns.WithLabelValues("aborted")))
}

// abortedTotal is how many transactions every life aborted, the running
// ones included.
func (f *fleet) abortedTotal() int {
	f.mu.Lock()
	n, running := f.aborted, append([]*member(nil), f.running...)
	f.mu.Unlock()
	for _, m := range running {
		n += abortedOf(m)
	}
	return n
}
