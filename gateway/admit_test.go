package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A tenant's limits are its own fields over the file's default_limits
// over DefaultLimits; a new rate without a burst takes the rate's default
// burst.
func TestTenantsLimits(t *testing.T) {
	ts, err := ParseTenants([]byte("default_limits:\n  concurrent_calls: 32\n  calls_per_second: 10\n" + tenantsYAML(
		tenantEntry("acme", "a")+"    limits:\n      concurrent_calls: 4\n",
		tenantEntry("globex", "g")+"    limits:\n      calls_per_second: 2.5\n",
		tenantEntry("initech", "i")+"    limits: {calls_per_second: 0, burst: 7}\n",
		tenantEntry("umbrella", "u"))))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Limits{
		"acme":     {ConcurrentCalls: 4, CallsPerSecond: 10, Burst: 10},
		"globex":   {ConcurrentCalls: 32, CallsPerSecond: 2.5, Burst: 3},
		"initech":  {ConcurrentCalls: 32, CallsPerSecond: 0, Burst: 7},
		"umbrella": {ConcurrentCalls: 32, CallsPerSecond: 10, Burst: 10},
		"unknown":  {ConcurrentCalls: 32, CallsPerSecond: 10, Burst: 10},
	} {
		if got := ts.Limits(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	plain, err := ParseTenants([]byte(tenantsYAML(tenantEntry("acme", "a"))))
	if err != nil {
		t.Fatal(err)
	}
	single, err := SingleTenant("default", "tok")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Limits("acme") != DefaultLimits || single.Limits("default") != DefaultLimits {
		t.Fatalf("without limits in the file: %+v and %+v, want DefaultLimits", plain.Limits("acme"), single.Limits("default"))
	}
}

// The limits are read strictly: every mistake names its line.
func TestTenantsLimitsErrorsNameTheLine(t *testing.T) {
	entry := tenantEntry("acme", "a") // lines 2-4
	tests := []struct{ name, yaml, want string }{
		{"unknown field", tenantsYAML(entry + "    limits:\n      concurrency: 4\n"), `line 6: tenants[0] (acme): limits: unknown field "concurrency"`},
		{"not an integer", tenantsYAML(entry + "    limits:\n      concurrent_calls: 2.5\n"), "line 6: tenants[0] (acme): limits: concurrent_calls: want an integer from 1"},
		{"zero", tenantsYAML(entry + "    limits:\n      concurrent_calls: 0\n"), "line 6: tenants[0] (acme): limits: concurrent_calls: want an integer from 1"},
		{"a string", tenantsYAML(entry + "    limits:\n      calls_per_second: \"5\"\n"), "line 6: tenants[0] (acme): limits: calls_per_second: want a number"},
		{"negative rate", "default_limits:\n  calls_per_second: -1\n" + tenantsYAML(entry), "line 2: calls_per_second: want a number"},
		{"twice", tenantsYAML(entry + "    limits:\n      burst: 2\n      burst: 3\n"), "line 7: tenants[0] (acme): limits: duplicate field burst"},
		{"not a mapping", tenantsYAML(entry + "    limits: 5\n"), "line 5: tenants[0] (acme): limits: must be a mapping"},
		{"limits twice", tenantsYAML(entry + "    limits: {}\n    limits: {}\n"), "line 6: tenants[0]: duplicate field limits"},
		{"defaults twice", "default_limits: {}\ndefault_limits: {}\n" + tenantsYAML(entry), "line 2: duplicate field default_limits"},
		{"unknown top field", "limits: {}\n" + tenantsYAML(entry), `line 1: unknown field "limits" (want tenants, default_limits)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTenants([]byte(tc.yaml))
			if !errors.Is(err, ErrTenants) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A limiter runs a tenant's share at once and queues up to its queue
// share; the rest is refused at once. A waiter of a tenant at its share
// is passed over for a later one of a tenant below it.
func TestLimiterShares(t *testing.T) {
	l := newLimiter(share{run: 3, queue: 5})
	ctx := context.Background()
	s := share{run: 2, queue: 3}
	a1, err := l.acquire(ctx, "a", s)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := l.acquire(ctx, "a", s)
	if err != nil {
		t.Fatal(err)
	}
	a3 := make(chan func(), 1)
	go func() { r, _ := l.acquire(ctx, "a", s); a3 <- r }() // waits: a runs its share
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.mu.waiting) == 1 })
	if _, err := l.acquire(ctx, "a", s); !errors.Is(err, errBusy) {
		t.Fatalf("a fourth of a: %v, want errBusy", err)
	}
	b1, err := l.acquire(ctx, "b", s) // runs: b is below its share, the whole below its run
	if err != nil {
		t.Fatal(err)
	}
	b2 := make(chan func(), 1)
	go func() { r, _ := l.acquire(ctx, "b", s); b2 <- r }() // waits: the whole runs 3
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.mu.waiting) == 2 })
	if _, err := l.acquire(ctx, "c", s); !errors.Is(err, errFull) {
		t.Fatalf("c with 5 admitted: %v, want errFull", err)
	}
	b1() // b's waiter starts, not a's older one: a still runs its share
	(<-b2)()
	a1()
	(<-a3)()
	a2()
	a2() // a second release does nothing
	if l.mu.admitted != 0 || l.mu.running != 0 || len(l.mu.tenants) != 0 {
		t.Fatalf("left: admitted %d running %d tenants %v", l.mu.admitted, l.mu.running, l.mu.tenants)
	}
}

// A waiter whose context ends leaves the queue and its place.
func TestLimiterCancelledWaiter(t *testing.T) {
	l := newLimiter(share{run: 1, queue: 2})
	r, err := l.acquire(context.Background(), "a", share{run: 1, queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := l.acquire(ctx, "a", share{run: 1, queue: 2}); done <- err }()
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.mu.waiting) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	r()
	if l.mu.admitted != 0 || l.mu.running != 0 || len(l.mu.waiting) != 0 {
		t.Fatalf("left: admitted %d running %d waiting %d", l.mu.admitted, l.mu.running, len(l.mu.waiting))
	}
}

// A tenant's bucket holds its burst, fills at its rate, and says how long
// until the next call; new limits take effect at once; a rate of 0 is no
// limit.
func TestRates(t *testing.T) {
	r := newRates()
	t0 := time.Unix(1000, 0)
	l := Limits{CallsPerSecond: 2, Burst: 3}
	for i := range 3 {
		if _, ok := r.take("a", l, t0); !ok {
			t.Fatalf("call %d of a burst of 3 refused", i+1)
		}
	}
	wait, ok := r.take("a", l, t0)
	if ok || wait != 500*time.Millisecond || retrySeconds(wait) != 1 {
		t.Fatalf("fourth call: %v %s, want refused for 500ms", ok, wait)
	}
	if _, ok := r.take("b", l, t0); !ok {
		t.Fatal("another tenant's bucket is not its own")
	}
	if _, ok := r.take("a", l, t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("a call after the bucket refilled one was refused")
	}
	if _, ok := r.take("a", Limits{CallsPerSecond: 0.5, Burst: 1}, t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("new limits start with a full bucket")
	}
	if wait, ok := r.take("a", Limits{CallsPerSecond: 0.5, Burst: 1}, t0.Add(500*time.Millisecond)); ok || retrySeconds(wait) != 2 {
		t.Fatalf("at 0.5 a second: %v, Retry-After %d, want 2", ok, retrySeconds(wait))
	}
	for range 100 {
		if _, ok := r.take("c", Limits{}, t0); !ok {
			t.Fatal("a rate of 0 refused a call")
		}
	}
}

// Admission: concurrent_calls first, then calls_per_second; a refusal
// names its limit, and a call refused by the rate gives its place back.
func TestAdmission(t *testing.T) {
	a := newAdmission()
	t0 := time.Unix(1000, 0)
	a.now = func() time.Time { return t0 }
	l := Limits{ConcurrentCalls: 2, CallsPerSecond: 1, Burst: 2}
	r1, err := a.admit("a", l)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.admit("a", l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.admit("a", l); !isLimit(err, limitConcurrent) {
		t.Fatalf("third call in flight: %v", err)
	}
	r1()
	if _, err := a.admit("a", l); !isLimit(err, limitRate) {
		t.Fatalf("third call within the second: %v", err)
	}
	r2()
	a.now = func() time.Time { return t0.Add(time.Second) }
	r3, err := a.admit("a", l) // the rate's refusal gave its place back
	if err != nil {
		t.Fatal(err)
	}
	r3()
}

func isLimit(err error, limit string) bool {
	le, ok := limitOf(err)
	return ok && le.Limit == limit && le.RetryAfter >= 1 && le.Detail != ""
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 5000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not met")
}
