// Command pebblemeasure compares Pebble v1.1 and v2.1 on the store's
// workload, in one process and alternating, so that a busy machine weighs
// on both alike: a restore (two writes per key in NoSync batches, then one
// synced write), reads of stored keys from a cold cache (a replay of a key
// no member holds in memory), and reads of absent keys (a new call's
// lookup, which the bloom filter answers). The options are the store's
// (state.Open): 64 MiB cache, 16 MiB memtable, a 10-bit bloom filter on
// every level; v1 at its default format, v2 at its newest, with its default
// columnar blocks and with row blocks.
//
//	cd scripts/pebblemeasure && go run . -keys 1000000 -rounds 3
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	pebblev1 "github.com/cockroachdb/pebble"
	bloomv1 "github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// kvdb is what the workload needs of either line.
type kvdb interface {
	write(keys [][]byte, vals [][]byte, sync bool) error
	get(k []byte) (bool, error)
	close() error
}

type v1db struct{ db *pebblev1.DB }

func openV1(dir string) (kvdb, error) {
	c := pebblev1.NewCache(64 << 20)
	defer c.Unref()
	db, err := pebblev1.Open(dir, &pebblev1.Options{
		Cache: c, MemTableSize: 16 << 20, Logger: quiet{},
		Levels: []pebblev1.LevelOptions{{FilterPolicy: bloomv1.FilterPolicy(10), FilterType: pebblev1.TableFilter}},
	})
	return v1db{db}, err
}

func (d v1db) write(keys, vals [][]byte, sync bool) error {
	b := d.db.NewBatch()
	for i := range keys {
		_ = b.Set(keys[i], vals[i], nil)
	}
	o := pebblev1.NoSync
	if sync {
		o = pebblev1.Sync
	}
	return b.Commit(o)
}

func (d v1db) get(k []byte) (bool, error) {
	_, c, err := d.db.Get(k)
	if err == pebblev1.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.Close()
}

func (d v1db) close() error { return d.db.Close() }

type v2db struct{ db *pebble.DB }

// openV2 opens with v2's default, columnar blocks, or with row blocks.
func openV2(columnar bool) func(string) (kvdb, error) {
	return func(dir string) (kvdb, error) { return openV2With(dir, columnar) }
}

func openV2With(dir string, columnar bool) (kvdb, error) {
	c := pebble.NewCache(64 << 20)
	defer c.Unref()
	o := &pebble.Options{Cache: c, MemTableSize: 16 << 20, Logger: quiet{}, FormatMajorVersion: pebble.FormatNewest}
	o.Experimental.EnableColumnarBlocks = func() bool { return columnar }
	o.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	db, err := pebble.Open(dir, o)
	return v2db{db}, err
}

func (d v2db) write(keys, vals [][]byte, sync bool) error {
	b := d.db.NewBatch()
	for i := range keys {
		_ = b.Set(keys[i], vals[i], nil)
	}
	o := pebble.NoSync
	if sync {
		o = pebble.Sync
	}
	return b.Commit(o)
}

func (d v2db) get(k []byte) (bool, error) {
	_, c, err := d.db.Get(k)
	if err == pebble.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.Close()
}

func (d v2db) close() error { return d.db.Close() }

type quiet struct{}

func (quiet) Infof(string, ...interface{})  {}
func (quiet) Errorf(string, ...interface{}) {}
func (quiet) Fatalf(f string, a ...interface{}) {
	panic(fmt.Sprintf(f, a...))
}

func key(tenant string, i int) []byte {
	return fmt.Appendf(nil, "r%s\x00call-%012d", tenant, i)
}

// value is a record's size and shape: a msgpack map with a random
// (incompressible) id and repeated field names.
func value(r *rand.Rand, i int, status byte) []byte {
	v := make([]byte, 0, 220)
	v = append(v, "\x8f\xa6tenant\xa5bench\xa3key"...)
	v = binary.BigEndian.AppendUint64(v, uint64(i))
	v = append(v, "\xa6status"...)
	v = append(v, status)
	for range 6 {
		v = binary.BigEndian.AppendUint64(v, r.Uint64())
	}
	v = append(v, "\xa6origin\x84\xa9intent_id\xa8reply_to\xa4type\xa2at\xa7attempt\x01\xa9called_at\xadpending_until\xacretention_ms"...)
	return v
}

type sample struct{ wall, cpu time.Duration }

func cpuNow() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func timed(f func() error) (sample, error) {
	w, c := time.Now(), cpuNow()
	err := f()
	return sample{time.Since(w), cpuNow() - c}, err
}

type result struct{ restore, reopen, hit, miss sample }

func run(open func(string) (kvdb, error), dir string, keys, reads int) (result, error) {
	var res result
	db, err := open(dir)
	if err != nil {
		return res, err
	}
	r := rand.New(rand.NewPCG(1, 2))
	const batch = 4000
	res.restore, err = timed(func() error {
		ks, vs := make([][]byte, 0, batch), make([][]byte, 0, batch)
		for i := 0; i < keys; i += batch / 2 {
			ks, vs = ks[:0], vs[:0]
			for j := i; j < min(i+batch/2, keys); j++ {
				ks = append(ks, key("bench", j), key("bench", j))
				vs = append(vs, value(r, j, 1), value(r, j, 2))
			}
			if err := db.write(ks, vs, false); err != nil {
				return err
			}
		}
		return db.write([][]byte{key("mark", 0)}, [][]byte{{1}}, true)
	})
	if err != nil {
		return res, err
	}
	if err := db.close(); err != nil {
		return res, err
	}
	res.reopen, err = timed(func() error { db, err = open(dir); return err })
	if err != nil {
		return res, err
	}
	defer db.close()
	res.hit, err = timed(func() error { return gets(db, r, "bench", keys, reads, true) })
	if err != nil {
		return res, err
	}
	res.miss, err = timed(func() error { return gets(db, r, "new", keys, reads, false) })
	return res, err
}

func gets(db kvdb, r *rand.Rand, tenant string, keys, reads int, want bool) error {
	for range reads {
		ok, err := db.get(key(tenant, r.IntN(keys)))
		if err != nil {
			return err
		}
		if ok != want {
			return fmt.Errorf("get in %s: found %v", tenant, ok)
		}
	}
	return nil
}

func main() {
	keys := flag.Int("keys", 1_000_000, "keys restored (two writes each)")
	reads := flag.Int("reads", 200_000, "reads of stored keys, and of absent keys, after a reopen")
	rounds := flag.Int("rounds", 3, "rounds of v1, v2 (columnar blocks, its default) and v2 with row blocks")
	flag.Parse()
	fmt.Println("| round | Pebble | load | restore s (CPU s) | reopen ms | cold reads/s of stored keys (CPU µs per read) | reads/s of absent keys (CPU µs per read) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for round := 1; round <= *rounds; round++ {
		for _, line := range []struct {
			name string
			open func(string) (kvdb, error)
		}{{"v1.1.5", openV1}, {"v2.1.7", openV2(true)}, {"v2.1.7 row blocks", openV2(false)}} {
			dir, err := os.MkdirTemp("", "pebblemeasure-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			load, _ := os.ReadFile("/proc/loadavg")
			res, err := run(line.open, dir, *keys, *reads)
			os.RemoveAll(dir)
			if err != nil {
				fmt.Fprintln(os.Stderr, line.name, err)
				os.Exit(1)
			}
			perS := func(s sample) float64 { return float64(*reads) / s.wall.Seconds() }
			cpuPer := func(s sample) float64 { return float64(s.cpu.Microseconds()) / float64(*reads) }
			fmt.Printf("| %d | %s | %.14s | %.2f (%.2f) | %d | %.0f (%.1f) | %.0f (%.1f) |\n", round, line.name, load,
				res.restore.wall.Seconds(), res.restore.cpu.Seconds(), res.reopen.wall.Milliseconds(),
				perS(res.hit), cpuPer(res.hit), perS(res.miss), cpuPer(res.miss))
		}
	}
}
