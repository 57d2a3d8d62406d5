package executor

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
)

func newTestHot() (*hotRecords, *prometheus.CounterVec) {
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lookups"}, []string{"result"})
	return newHotRecords(lookups), lookups
}

func hotRec(tenant, key string, result int) *saga.Record {
	return &saga.Record{Tenant: tenant, Key: key, Tool: "t", Status: saga.StatusSucceeded, Result: bytes.Repeat([]byte{1}, result)}
}

func TestHotRecordsAnswerWhatWasMaterialisedAndCountLookups(t *testing.T) {
	h, lookups := newTestHot()
	k := overlay.Key{Tenant: "a", Key: "k"}
	if _, ok := h.get(k); ok {
		t.Fatal("an empty cache answered")
	}
	r := hotRec("a", "k", 0)
	h.put(3, k, r)
	if got, ok := h.get(k); !ok || got != r {
		t.Fatalf("get after put = %v, %v", got, ok)
	}
	h.drop(k)
	if _, ok := h.get(k); ok {
		t.Fatal("a dropped key answered")
	}
	if hit, miss := counted(t, lookups, "hit"), counted(t, lookups, "miss"); hit != 1 || miss != 2 {
		t.Fatalf("hits %v, misses %v; want 1, 2", hit, miss)
	}
}

func TestHotRecordsForgetAPartitionAndEverything(t *testing.T) {
	h, _ := newTestHot()
	for i := range 10 {
		h.put(int32(i%2), overlay.Key{Tenant: "a", Key: fmt.Sprint(i)}, hotRec("a", fmt.Sprint(i), 0))
	}
	h.forgetPartition(1)
	for i := range 10 {
		_, ok := h.get(overlay.Key{Tenant: "a", Key: fmt.Sprint(i)})
		if ok != (i%2 == 0) {
			t.Fatalf("key %d held = %v after partition 1 was forgotten", i, ok)
		}
	}
	h.forgetAll()
	if h.len() != 0 || h.bytes != 0 || len(h.byKey) != 0 {
		t.Fatalf("after forgetAll: %d records, %d bytes", h.len(), h.bytes)
	}
}

func TestHotRecordsStayWithinTheirBoundsAndKeepTheNewest(t *testing.T) {
	h, _ := newTestHot()
	for i := range hotRecordsMax + 100 {
		h.put(0, overlay.Key{Tenant: "a", Key: fmt.Sprint(i)}, hotRec("a", fmt.Sprint(i), 0))
	}
	if h.len() != hotRecordsMax || len(h.byKey) != hotRecordsMax {
		t.Fatalf("%d records held (%d in the map); the bound is %d", h.len(), len(h.byKey), hotRecordsMax)
	}
	checkHotConsistent(t, h)
	if _, ok := h.get(overlay.Key{Tenant: "a", Key: "0"}); ok {
		t.Fatal("the oldest record was not the one evicted")
	}
	if _, ok := h.get(overlay.Key{Tenant: "a", Key: fmt.Sprint(hotRecordsMax + 99)}); !ok {
		t.Fatal("the newest record was evicted")
	}
	big := 1 << 20
	for i := range 40 {
		h.put(0, overlay.Key{Tenant: "b", Key: fmt.Sprint(i)}, hotRec("b", fmt.Sprint(i), big))
	}
	if h.bytes > hotRecordsMaxBytes {
		t.Fatalf("%d bytes held; the bound is %d", h.bytes, hotRecordsMaxBytes)
	}
	checkHotConsistent(t, h)
	h.put(0, overlay.Key{Tenant: "c", Key: "huge"}, hotRec("c", "huge", hotRecordsMaxBytes))
	if _, ok := h.get(overlay.Key{Tenant: "c", Key: "huge"}); ok {
		t.Fatal("a record of a quarter of the budget or more was held")
	}
}

func TestHotRecordsReplacingAKeyKeepsOneCopyAndItsSize(t *testing.T) {
	h, _ := newTestHot()
	k := overlay.Key{Tenant: "a", Key: "k"}
	h.put(0, k, hotRec("a", "k", 100))
	h.put(0, k, hotRec("a", "k", 10))
	if h.len() != 1 || h.bytes != hotSize(hotRec("a", "k", 10)) {
		t.Fatalf("%d records, %d bytes after a replace", h.len(), h.bytes)
	}
}

func counted(t *testing.T, v *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(label).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// checkHotConsistent: every map entry names its own element, and the
// byte count is the sum of the sizes held.
func checkHotConsistent(t *testing.T, h *hotRecords) {
	t.Helper()
	total := 0
	for el := h.lru.Front(); el != nil; el = el.Next() {
		hr := el.Value.(*hotRecord)
		if h.byKey[hr.k] != el || hr.rec.Key != hr.k.Key {
			t.Fatalf("element of %v is not the map's", hr.k)
		}
		total += hr.size
	}
	if total != h.bytes || len(h.byKey) != h.lru.Len() {
		t.Fatalf("bytes %d, sum %d; map %d, list %d", h.bytes, total, len(h.byKey), h.lru.Len())
	}
}

// len is the number of records held.
func (h *hotRecords) len() int { return h.lru.Len() }
