package state

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"

	"github.com/atmostonce/toolexec/saga"
)

// A write or sync of Pebble's log that fails (a full disk, an fsync
// error) breaks the store: the commit returns ErrBroken instead of
// panicking, every later operation refuses, Close does not touch Pebble,
// and a reopen with a healthy disk finds every write synced before.
func TestFailedLogWriteBreaksTheStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   func(fail *atomic.Bool) vfs.FS
	}{
		// errorfs fails the log's writes, as ENOSPC would.
		{"write", func(fail *atomic.Bool) vfs.FS {
			return errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
				if fail.Load() && op == errorfs.OpFileWrite && strings.HasSuffix(path, ".log") {
					return errorfs.ErrInjected
				}
				return nil
			}))
		}},
		// Pebble syncs its log with SyncData/SyncTo, which errorfs (v1.1)
		// passes through: syncFailFS fails them.
		{"fsync", func(fail *atomic.Bool) vfs.FS { return syncFailFS{FS: vfs.Default, fail: fail} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fail atomic.Bool
			dir := t.TempDir()
			s, err := Open(dir, Options{FS: tc.fs(&fail), CacheBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			stPut(t, s, 0, nil, stRec("t", "before", saga.StatusStarted))
			fail.Store(true)
			b := s.NewBatch()
			if err := b.Put(0, nil, stRec("t", "during", saga.StatusStarted)); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(Sync); !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "injected error") {
				t.Fatalf("commit on a failing log: %v, want ErrBroken naming the cause", err)
			}
			fail.Store(false)
			if _, err := s.Get("t", "before"); !errors.Is(err, ErrBroken) {
				t.Fatalf("a read after the failure: %v, want ErrBroken", err)
			}
			b = s.NewBatch()
			_ = b.Put(0, nil, stRec("t", "after", saga.StatusStarted))
			if err := b.Commit(Sync); !errors.Is(err, ErrBroken) {
				t.Fatalf("a commit after the failure: %v, want ErrBroken", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close of a broken store: %v", err)
			}
			s, err = Open(dir, Options{CacheBytes: 1 << 20})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer s.Close()
			if stGet(t, s, "t", "before") == nil {
				t.Fatal("the write synced before the failure is gone")
			}
			if stGet(t, s, "t", "after") != nil {
				t.Fatal("a write refused as broken was applied")
			}
		})
	}
}

// syncFailFS fails the syncs of the files it creates while fail is set.
type syncFailFS struct {
	vfs.FS
	fail *atomic.Bool
}

func (fs syncFailFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return syncFailFile{File: f, fail: fs.fail}, err
}

func (fs syncFailFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return syncFailFile{File: f, fail: fs.fail}, err
}

type syncFailFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f syncFailFile) Sync() error {
	if f.fail.Load() {
		return errorfs.ErrInjected
	}
	return f.File.Sync()
}

func (f syncFailFile) SyncData() error {
	if f.fail.Load() {
		return errorfs.ErrInjected
	}
	return f.File.SyncData()
}

func (f syncFailFile) SyncTo(length int64) (bool, error) {
	if f.fail.Load() {
		return false, errorfs.ErrInjected
	}
	return f.File.SyncTo(length)
}
