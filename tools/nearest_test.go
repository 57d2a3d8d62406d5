package tools

import (
	"context"
	"testing"
)

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"demo.refnd", "demo.refund", 1}, {"flaw", "lawn", 2}, {"héllo", "hello", 1}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNearestName(t *testing.T) {
	names := []string{"demo.echo", "demo.lost_refund", "demo.lost_reply", "demo.refund"}
	for name, want := range map[string]string{
		"demo.ech": "demo.echo", "Demo.Echo": "demo.echo", "refund": "demo.refund", "demo.lost_rply": "demo.lost_reply",
		"payments.refund": "", "x": "", "": "",
	} {
		got, ok := NearestName(name, names)
		if got != want || ok != (want != "") {
			t.Errorf("NearestName(%q) = %q %v, want %q", name, got, ok, want)
		}
	}
}

// Only the tools a tenant may call are suggested to it.
func TestRegistryNearestKeepsToTheTenantsTools(t *testing.T) {
	r := NewRegistry()
	for _, s := range []Spec{{Name: "acme.report", Class: NativeKey, Tenants: []string{"acme"}}, {Name: "demo.echo", Class: NativeKey}} {
		if err := r.Register(s, Func(func(_ context.Context, _ Request) Outcome { return Outcome{} })); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok := r.Nearest("acme", "acme.reprt"); got != "acme.report" || !ok {
		t.Errorf("acme: %q %v", got, ok)
	}
	if got, ok := r.Nearest("globex", "acme.reprt"); ok {
		t.Errorf("globex was shown %q, a tool outside its allow-list", got)
	}
}
