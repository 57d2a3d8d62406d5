package state

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// keyFilter is a bloom filter of the record keys a store may hold: a
// "no" is certain, a "maybe" reads Pebble. Why: every new key's first
// lookup misses, and a miss still walked Pebble's memtable skiplist and
// the filter blocks of every level (about a tenth of a new call's CPU);
// here it costs one cache line.
//
// It is a list of split-block bloom filters (the layout of Parquet's:
// a key sets one bit in each of the 8 words of one 32-byte block), each
// twice the size of the one before. A layer takes keys until half its
// bits are set (then about 1 lookup in 200 of an absent key says
// "maybe"), and a larger one is added. Keys are never removed: a deleted
// key leaves its bits, and the store rebuilds the filter from a scan
// once it outgrows the keys it held (recordFilter).
//
// Safe for concurrent use: bits are set with atomic ORs, and layers are
// added under mu and published as a new slice.
type keyFilter struct {
	mu     sync.Mutex                    // held to add a layer
	layers atomic.Pointer[[]*bloomLayer] // oldest first; the last one takes new keys
}

// bloomLayer is one split-block bloom filter.
type bloomLayer struct {
	blocks []bloomBlock
	set    atomic.Int64 // bits set so far
	limit  int64        // set bits at which a new layer takes over
}

type bloomBlock [8]uint32

// bloomSalt are the odd constants of Parquet's split-block bloom filter,
// one per word of a block.
var bloomSalt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

const (
	// filterBitsPerKey sizes a layer for the keys it is meant to take:
	// at 10 bits per key half of its bits are set near that count.
	filterBitsPerKey = 10
	// filterMinBits is the smallest layer: 128 KiB, about 100,000 keys.
	filterMinBits = 1 << 20
)

// newKeyFilter returns a filter whose first layer is sized for keys keys.
func newKeyFilter(keys int64) *keyFilter {
	f := &keyFilter{}
	l := newBloomLayer(layerBits(keys))
	f.layers.Store(&[]*bloomLayer{l})
	return f
}

// layerBits is the power of two of bits that holds keys keys.
func layerBits(keys int64) int64 {
	n := keys * filterBitsPerKey
	if n <= filterMinBits {
		return filterMinBits
	}
	return 1 << bits.Len64(uint64(n-1))
}

func newBloomLayer(nbits int64) *bloomLayer {
	return &bloomLayer{blocks: make([]bloomBlock, nbits/256), limit: nbits / 2}
}

// add records h (a hash of a record key).
func (f *keyFilter) add(h uint64) {
	ls := *f.layers.Load()
	last := ls[len(ls)-1]
	if last.add(h) {
		f.grow(last)
	}
}

// mayContain reports whether a key of hash h may have been added.
func (f *keyFilter) mayContain(h uint64) bool {
	for _, l := range *f.layers.Load() {
		if l.has(h) {
			return true
		}
	}
	return false
}

// grow adds a layer twice the size of full, unless another add did.
func (f *keyFilter) grow(full *bloomLayer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ls := *f.layers.Load()
	if ls[len(ls)-1] != full {
		return
	}
	l := newBloomLayer(int64(len(full.blocks)) * 256 * 2)
	next := append(append(make([]*bloomLayer, 0, len(ls)+1), ls...), l)
	f.layers.Store(&next)
}

// add sets h's bits and reports whether the layer is now full.
func (l *bloomLayer) add(h uint64) bool {
	b := &l.blocks[l.block(h)]
	k := uint32(h)
	var fresh int64
	for i := range b {
		m := uint32(1) << ((k * bloomSalt[i]) >> 27)
		if atomic.OrUint32(&b[i], m)&m == 0 {
			fresh++
		}
	}
	if fresh == 0 {
		return false
	}
	return l.set.Add(fresh) >= l.limit
}

func (l *bloomLayer) has(h uint64) bool {
	b := &l.blocks[l.block(h)]
	k := uint32(h)
	for i := range b {
		m := uint32(1) << ((k * bloomSalt[i]) >> 27)
		if atomic.LoadUint32(&b[i])&m == 0 {
			return false
		}
	}
	return true
}

// block maps the hash's high half onto the blocks without a division.
func (l *bloomLayer) block(h uint64) uint64 {
	return ((h >> 32) * uint64(len(l.blocks))) >> 32
}
