package chaos

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, l *Ledger, path, key string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+l.Addr()+path, strings.NewReader(`{"a":1}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tool-Tenant", "t0")
	req.Header.Set("X-Tool-Key", "k")
	return http.DefaultClient.Do(req)
}

// The ledger is the judge: native_key dedupes, the other classes count
// every request as an effect, the probe tells what happened, and drop mode
// performs the effect before it drops the connection.
func TestLedgerClasses(t *testing.T) {
	l, err := NewLedger(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 2; i++ {
		for _, p := range []string{"/native", "/irrev", "/read"} {
			resp, err := post(t, l, p, "dk"+p)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: %v %v", p, err, resp)
			}
			resp.Body.Close()
		}
	}
	s := l.Stats()
	if s.Keys["dk/native"].Effects != 1 || s.Keys["dk/irrev"].Effects != 2 || s.Keys["dk/read"].Effects != 0 || s.Calls != 6 {
		t.Fatalf("stats %+v", s)
	}
	for key, want := range map[string]int{"dk/irrev": 200, "nope": 404} {
		resp, err := http.Get("http://" + l.Addr() + "/probe/status?key=" + key)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("probe %s: %v %v", key, err, resp)
		}
		resp.Body.Close()
	}
	l.dropEvery = 1
	if _, err := post(t, l, "/irrev", "dropped"); err == nil {
		t.Fatal("drop mode answered")
	}
	if k := l.Stats().Keys["dropped"]; k.Effects != 1 || k.Dropped != 1 {
		t.Fatalf("dropped key %+v", k)
	}
}

// A call of a slow key has its effect after the caller gave up; its
// compensation does not wait.
func TestLedgerSlowKeys(t *testing.T) {
	l, err := NewLedger(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	do := func(path string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, "http://"+l.Addr()+path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "dk"+path)
		req.Header.Set("X-Tool-Tenant", "t0")
		req.Header.Set("X-Tool-Key", SlowKeyPrefix+"k")
		begin := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		resp.Body.Close()
		return time.Since(begin)
	}
	if d := do("/comp"); d < slowEffect {
		t.Fatalf("a slow call answered after %s", d)
	}
	if d := do("/undo"); d >= slowEffect {
		t.Fatalf("the compensation of a slow key waited %s", d)
	}
	s := l.Stats()
	if c, u := s.Keys["dk/comp"], s.Keys["dk/undo"]; c.Effects != 1 || u.Effects != 1 || !u.FirstEffect.After(c.FirstEffect) {
		t.Fatalf("effects %+v %+v", c, u)
	}
}

// The probe fence: a probe with fence=1 that finds no effect fences the
// key, and a request of the key that arrives later is refused without an
// effect (the late request of the probe race); a key that acted is
// reported as before, and a probe without fence=1 fences nothing.
func TestLedgerProbeFence(t *testing.T) {
	l, err := NewLedger(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	probe := func(key, query string) int {
		resp, err := http.Get("http://" + l.Addr() + "/probe/status?key=" + key + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := probe("late", ""); c != 404 {
		t.Fatalf("unfenced probe: %d", c)
	}
	if c := probe("late", "&fence=1"); c != 200 {
		t.Fatalf("fencing probe: %d", c)
	}
	resp, err := post(t, l, "/probe", "late")
	if err != nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("a request of a fenced key: %v %v", err, resp)
	}
	resp.Body.Close()
	if resp, err := post(t, l, "/probe", "early"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("call: %v %v", err, resp)
	}
	if c := probe("early", "&fence=1"); c != 200 {
		t.Fatalf("probe of a key that acted: %d", c)
	}
	if resp, err := post(t, l, "/probe", "early"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a key that acted is not fenced by its probe: %v %v", err, resp)
	}
	s := l.Stats()
	if s.Keys["late"].Effects != 0 || s.Fenced != 1 || s.Refused != 1 || s.Keys["early"].Effects != 2 {
		t.Fatalf("stats %+v", s)
	}
}
