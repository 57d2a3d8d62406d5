package sim

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// panicLogger makes Pebble's fatal errors panics a test can recover (its
// default logger exits the process).
type panicLogger struct{}

func (panicLogger) Infof(string, ...any)  {}
func (panicLogger) Errorf(string, ...any) {}
func (panicLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// TestDiskFaultSparesALogRotation: with the log's syncs failing, a
// rotation (here a flush's) closes the old log without a fault, and the
// next synced commit fails. A fault at the rotation's close would crash
// the whole simulation: Pebble panics there holding its lock.
func TestDiskFaultSparesALogRotation(t *testing.T) {
	d := &disk{}
	db, err := pebble.Open("db", &pebble.Options{FS: d.fs(vfs.NewMem()), Logger: panicLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a"), []byte("1"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	d.failSyncs.Store(true)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("a rotation met the fault: %v", r)
			}
		}()
		if err := db.Flush(); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}()
	fatal := func() (r any) {
		defer func() { r = recover() }()
		_ = db.Set([]byte("b"), []byte("2"), pebble.Sync)
		return nil
	}()
	if fatal == nil {
		t.Fatal("a synced commit with the log's syncs failing did not fail")
	}
}
