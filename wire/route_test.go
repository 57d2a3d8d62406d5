package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Vectors of Kafka's UtilsTest.testMurmur2 (org.apache.kafka.common.utils).
func TestMurmur2KafkaVectors(t *testing.T) {
	cases := []struct {
		in   []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
	}
	for _, c := range cases {
		if got := int32(murmur2(c.in)); got != c.want {
			t.Errorf("murmur2(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// Every tail length (0..3 bytes past a multiple of 4) goes through the
// same code as franz-go's Kafka-compatible key partitioner.
func TestPartitionMatchesKafkaDefaultPartitioner(t *testing.T) {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("tool.intents")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		key := make([]byte, i%67)
		for j := range key {
			key[j] = byte(rng.UintN(256))
		}
		for _, n := range []int32{1, 3, 12, 64, 1000} {
			want := int32(part.Partition(&kgo.Record{Key: key}, int(n)))
			if got := Partition(string(key), n); got != want {
				t.Fatalf("Partition(%x, %d) = %d, franz-go says %d", key, n, got, want)
			}
		}
	}
}

func TestPartitionFormula(t *testing.T) {
	for i := range 500 {
		rk := RoutingKey("tenant", fmt.Sprintf("key-%d", i))
		for _, n := range []int32{1, 2, 7, 12, 100, 1 << 20, 1<<31 - 1} {
			p := Partition(rk, n)
			if p < 0 || p >= n {
				t.Fatalf("Partition(%q, %d) = %d, out of range", rk, n, p)
			}
			if want := int32((murmur2([]byte(rk)) & 0x7fffffff) % uint32(n)); p != want {
				t.Fatalf("Partition(%q, %d) = %d, want %d", rk, n, p, want)
			}
			if Partition(rk, n) != p {
				t.Fatal("Partition is not deterministic")
			}
		}
	}
	// A key whose hash has the sign bit set still lands in range: "21"
	// hashes to a negative int32.
	neg := int32(-973932308)
	if p := Partition("21", 12); p != int32((uint32(neg)&0x7fffffff)%12) || p < 0 {
		t.Errorf("Partition(21, 12) = %d", p)
	}
	if Partition("", 5) < 0 || Partition("", 5) >= 5 {
		t.Error("empty key out of range")
	}
}

func TestPartitionPanicsWithoutPartitions(t *testing.T) {
	for _, n := range []int32{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Partition with n=%d did not panic", n)
				}
			}()
			Partition("a/b", n)
		}()
	}
}

func TestRoutingKeyRoundTrip(t *testing.T) {
	cases := [][2]string{
		{"acme", "k"},
		{"default", "order/42"},
		{"t", "/leading"},
		{"t", "trailing/"},
		{"t", "a//b///c"},
		{"t", ""},
		{"t_1-x", "ключ/\x00/é"},
	}
	for _, c := range cases {
		rk := RoutingKey(c[0], c[1])
		tenant, key, ok := SplitRoutingKey(rk)
		if !ok || tenant != c[0] || key != c[1] {
			t.Errorf("SplitRoutingKey(%q) = %q, %q, %v; want %q, %q", rk, tenant, key, ok, c[0], c[1])
		}
	}
	if _, _, ok := SplitRoutingKey("no-separator"); ok {
		t.Error("a key without '/' split")
	}
	if tenant, key, ok := SplitRoutingKey("/k"); !ok || tenant != "" || key != "k" {
		t.Errorf("SplitRoutingKey(/k) = %q %q %v", tenant, key, ok)
	}
	in := &Intent{Tenant: "acme", Key: "a/b"}
	if in.RoutingKey() != "acme/a/b" {
		t.Errorf("Intent.RoutingKey = %q", in.RoutingKey())
	}
}
