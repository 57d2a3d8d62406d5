package state

import (
	"fmt"

	pebblev1 "github.com/cockroachdb/pebble"
	bloomv1 "github.com/cockroachdb/pebble/bloom"
	vfsv1 "github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// v1UpgradeTarget is the format a store written by a Pebble v1 build is
// ratcheted to, by Pebble v1, before Pebble v2 opens it: v2's oldest
// (pebble.FormatMinSupported, the same number in both lines). v2 then
// ratchets it on to formatVersion with its own code. Why v1 does the first
// steps: v2 no longer carries the code that upgrades older formats (a store
// of v1's default format, FormatMostCompatible, has none of the markers v2
// reads), so an existing data directory would otherwise not open at all.
const v1UpgradeTarget = pebblev1.FormatFlushableIngest

// upgradeFromV1 ratchets the store in dir, when a Pebble v1 build wrote it
// in a format older than v2 opens, to v1UpgradeTarget. It does nothing for
// a store v2 opens as it is, a missing or empty directory, or one v1 cannot
// read either (v2's Open then reports it). Each ratchet step is atomic on
// disk (Pebble's format marker), so a crash midway is finished by the next
// open. It runs on the OS file system only: the one a v1 build wrote to
// (Options.FS is for tests, which create their stores with this build).
func upgradeFromV1(dir string) error {
	if d, err := pebble.Peek(dir, vfs.Default); err == nil && d.Exists {
		return nil
	}
	d, err := pebblev1.Peek(dir, vfsv1.Default)
	if err != nil || !d.Exists || d.FormatMajorVersion >= v1UpgradeTarget {
		return nil
	}
	return ratchetV1(dir, d.FormatMajorVersion)
}

// ratchetV1 opens dir with Pebble v1 and ratchets it to v1UpgradeTarget.
// The options that shape new sstables are the store's own (the ratchet may
// compact), so that tables written here carry the same bloom filter.
func ratchetV1(dir string, from pebblev1.FormatMajorVersion) error {
	opts := &pebblev1.Options{
		FormatMajorVersion: from,
		Logger:             quietLogger{},
		Levels:             []pebblev1.LevelOptions{{FilterPolicy: bloomv1.FilterPolicy(bloomBitsPerKey), FilterType: pebblev1.TableFilter}},
	}
	db, err := pebblev1.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("state: open %s with Pebble v1 to upgrade it: %w", dir, err)
	}
	if err := db.RatchetFormatMajorVersion(v1UpgradeTarget); err != nil {
		_ = db.Close()
		return fmt.Errorf("state: upgrade %s from Pebble format %d to %d: %w", dir, from, v1UpgradeTarget, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("state: close %s after its upgrade: %w", dir, err)
	}
	return nil
}
