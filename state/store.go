package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/saga"
)

var (
	// ErrCorrupt marks a stored value that fails its read-side check. The
	// view is rebuildable: delete the directory and the log restores it.
	ErrCorrupt = errors.New("state: corrupt value")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("state: store closed")
	// ErrBroken is returned by every operation after Pebble failed to
	// write or sync its log (a full disk, an fsync error). Pebble treats
	// that as fatal: its commit pipeline is left inconsistent, and a
	// write acknowledged afterwards might not be in the log. The owner
	// must stop using the view and restart: reopening replays the log up
	// to its last synced write, and the event log restores the rest.
	ErrBroken = errors.New("state: store broken by a failed write")
)

// Durability is chosen at the call site, as with pebble.Sync.
type Durability bool

const (
	Sync   Durability = true  // fsync before returning: the default for ticks
	NoSync Durability = false // for bulk restores, followed by one Sync commit
)

// Store is the Pebble view. Safe for concurrent use.
type Store struct {
	mu     sync.RWMutex // read-held by every operation, write-held by Close
	closed bool
	db     *pebble.DB
	filter *recordFilter // the record keys it may hold (recordfilter.go)
	// broken holds Pebble's fatal message once a write failed (ErrBroken).
	broken atomic.Pointer[string]
}

// acquire read-locks the store for one operation; after Close it returns
// ErrClosed instead of letting pebble panic. Release with s.mu.RUnlock.
func (s *Store) acquire() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if msg := s.broken.Load(); msg != nil {
		s.mu.RUnlock()
		return fmt.Errorf("%w: %s", ErrBroken, *msg)
	}
	return nil
}

// Options tune Open. The zero value is the production default.
type Options struct {
	// FS replaces the file system, for fault-injection tests (vfs.NewStrictMem).
	FS vfs.FS
	// CacheBytes is the block cache size; default DefaultCacheBytes.
	CacheBytes int64
}

// DefaultCacheBytes is the executor's block cache. Why 64 MiB: a replay of
// a key the hot records no longer hold reads its record's block; with
// 32 MiB the bench's replays over ~46,000 recent keys missed the cache on
// most reads (pread and snappy decode were 16% of the replay profile;
// with 128 MiB 6%). 64 MiB keeps the executor with 1,000,000 keys inside
// its 256 MB RSS budget (docs/PERFORMANCE.md).
const DefaultCacheBytes = 64 << 20

// bloomBitsPerKey sizes the bloom filter written into every sstable (one
// entry of Levels applies to all levels). Why: every new key's first
// lookup misses, and without a filter each miss reads and decompresses a
// data block of every level that spans the key; with 10 bits per key
// about 1% of misses still read a block. A bloom filter has no false
// negatives, so it can only skip blocks that cannot hold the key: a
// "no record" answer never comes from the filter alone. Tables written
// before this option have no filter and are read as before until a
// compaction rewrites them.
const bloomBitsPerKey = 10

// Open opens (creating if needed) the store in dir.
func Open(dir string, o Options) (*Store, error) {
	opts := &pebble.Options{}
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	opts.Cache = cache
	opts.MemTableSize = 16 << 20
	opts.Levels = []pebble.LevelOptions{{FilterPolicy: bloom.FilterPolicy(bloomBitsPerKey), FilterType: pebble.TableFilter}}
	opts.Logger = quietLogger{}
	if o.FS != nil {
		opts.FS = o.FS
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", dir, err)
	}
	s := &Store{db: db, filter: newRecordFilter()}
	s.filter.startScan(s)
	return s, nil
}

// Close flushes and closes the store.
func (s *Store) Close() error {
	s.filter.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	if s.broken.Load() != nil {
		return s.closeBroken()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("state: close: %w", err)
	}
	return nil
}

// closeBroken closes a store broken by a failed write: Pebble may fail
// its own close then (its log cannot be written), which is expected and
// not reported; closing releases the directory's lock.
func (s *Store) closeBroken() error {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(pebbleFatal); !ok {
				panic(r)
			}
		}
	}()
	_ = s.db.Close()
	return nil
}

// Get returns the record of (tenant, key), or nil when there is none.
func (s *Store) Get(tenant, key string) (*saga.Record, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	k := recordKey(tenant, key)
	if s.filter.absent(k) {
		s.checkAbsent(k)
		return nil, nil
	}
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: get %s/%s: %w", tenant, key, err)
	}
	defer closer.Close()
	return decodeRecord(v, tenant, key)
}

// Checkpoint returns the next offset of topic/partition to apply (0 when
// nothing was applied).
func (s *Store) Checkpoint(topic string, partition int32) (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	v, closer, err := s.db.Get(checkpointKey(topic, partition))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("state: checkpoint %s/%d: %w", topic, partition, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: checkpoint %s/%d has %d bytes", ErrCorrupt, topic, partition, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// checkAbsent (invariants only): a key the filter rules out has no
// record. One it held would be answered as new: a second call.
func (s *Store) checkAbsent(k []byte) {
	if !invariants.Enabled {
		return
	}
	_, closer, err := s.db.Get(k)
	if err == nil {
		closer.Close()
	}
	invariants.Check(errors.Is(err, pebble.ErrNotFound), "state: the key filter rules out %q, which Pebble answers with %v", k, err)
}

func decodeRecord(v []byte, tenant, key string) (*saga.Record, error) {
	var r saga.Record
	if err := unmarshalRecord(v, &r); err != nil {
		return nil, fmt.Errorf("%w: record %s/%s: %w", ErrCorrupt, tenant, key, err)
	}
	if err := checkRecord(&r); err != nil {
		return nil, err
	}
	if r.Tenant != tenant || r.Key != key {
		return nil, fmt.Errorf("%w: record stored under %s/%s names %s/%s", ErrCorrupt, tenant, key, r.Tenant, r.Key)
	}
	return &r, nil
}

// checkRecord is the pair assertion run right before a write and right
// after a read.
func checkRecord(r *saga.Record) error {
	switch {
	case r.Tenant == "" || r.Key == "":
		return fmt.Errorf("%w: record without tenant or key", ErrCorrupt)
	case r.Status == saga.StatusNone || r.Status.String() == "invalid":
		return fmt.Errorf("%w: record %s/%s has status %d", ErrCorrupt, r.Tenant, r.Key, r.Status)
	case r.Origin.IntentID == "":
		return fmt.Errorf("%w: record %s/%s has no origin intent", ErrCorrupt, r.Tenant, r.Key)
	}
	return nil
}

// quietLogger drops Pebble's informational lines (WAL replay notes on
// every open) and keeps errors on stderr; a fatal error still panics, as
// Pebble expects, with a pebbleFatal that a commit turns into ErrBroken
// (Batch.apply).
type quietLogger struct{}

// pebbleFatal is the panic value of Pebble's fatal errors.
type pebbleFatal string

func (quietLogger) Infof(string, ...interface{}) {}

func (quietLogger) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}

func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(pebbleFatal(fmt.Sprintf("pebble: "+format, args...)))
}
