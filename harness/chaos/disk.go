package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// disks gives each executor slot a disk of its own that the harness can
// fill: a small tmpfs mounted on its data dir (the harness must be root).
// A full disk makes the executor's next write of its view fail, as
// ENOSPC on a real disk would. Safe for concurrent use.
type disks struct {
	size string // tmpfs size, e.g. "256m"

	mu      sync.Mutex
	mounted []string
}

// fillName is the file that fills a disk.
const fillName = ".chaos-disk-full"

// mount mounts a tmpfs on dir (made if missing) unless one is there.
func (d *disks) mount(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.mounted {
		if m == dir {
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+d.size+",mode=0755"); err != nil {
		return fmt.Errorf("chaos: mount a %s tmpfs on %s (disk faults need root; --disk-faults=false runs without them): %w", d.size, dir, err)
	}
	d.mounted = append(d.mounted, dir)
	return nil
}

// fill takes every free byte of dir's disk.
func (d *disks) fill(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, fillName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	free := int64(st.Bavail) * st.Bsize
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, free); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("chaos: fill %s: %w", dir, err)
	}
	return nil
}

// free gives the disk's space back.
func (d *disks) free(dir string) error {
	if err := os.Remove(filepath.Join(dir, fillName)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// unmountAll unmounts every tmpfs (lazily: a process that still holds a
// file there must not block the harness's exit).
func (d *disks) unmountAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.mounted {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	d.mounted = nil
}

// clearDir deletes what dir holds, not dir itself (it may be a mount).
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
