package tokenfile

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

var errTest = errors.New("test: operators")

var testKind = Kind{List: "operators", Item: "operator", ValidName: regexp.MustCompile(`^[a-z]{1,8}$`).MatchString,
	NameRule: "[a-z]{1,8}", MaxNames: 4, MaxTokens: 2, MaxHashes: 5, Err: errTest}

func entry(name string, tokens ...string) string {
	s := "  - name: " + name + "\n    tokens:\n"
	for _, tok := range tokens {
		s += "      - \"" + HashToken(tok) + "\"\n"
	}
	return s
}

// The list's field, the entry's word and the bounds come from the kind.
func TestParseByKind(t *testing.T) {
	s, err := Parse(testKind, []byte("operators:\n"+entry("alice", "a1", "a2")+entry("bob", "b1")))
	if err != nil {
		t.Fatal(err)
	}
	name, h, ok := s.Lookup("a2")
	if !ok || name != "alice" || !s.Holds(h, "alice") || s.Holds(h, "bob") {
		t.Fatalf("a2: %q %v", name, ok)
	}
	if _, _, ok := s.Lookup("a3"); ok {
		t.Fatal("an unknown token matched")
	}
	tests := map[string]string{
		"tenants: []\n": `unknown field "tenants" (want operators)`,
		"operators:\n" + entry("alice", "a") + entry("alice", "b"):                                               "name: operator listed twice",
		"operators:\n" + entry("alice", "a") + entry("bob", "a"):                                                 "a token binds to exactly one operator",
		"operators:\n" + entry("alice", "a", "b", "c"):                                                           "tokens: 3 tokens, at most 2 allowed",
		"operators:\n" + entry("Alice", "a"):                                                                     `name: "Alice" must match [a-z]{1,8}`,
		"operators:\n" + entry("a", "1") + entry("b", "2") + entry("c", "3") + entry("d", "4") + entry("e", "5"): "5 operators, at most 4 allowed",
		"operators:\n" + entry("a", "1", "2") + entry("b", "3", "4") + entry("c", "5", "6"):                      "more than 5 token hashes",
	}
	for yaml, want := range tests {
		if _, err := Parse(testKind, []byte(yaml)); !errors.Is(err, errTest) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}

// Shares finds a token listed in two sets: a tenant's token must never be
// an operator's.
func TestShares(t *testing.T) {
	a, _ := Parse(testKind, []byte("operators:\n"+entry("alice", "x", "y")))
	b, _ := Single(testKind, "bob", "y")
	c, _ := Single(testKind, "carol", "z")
	if !a.Shares(b) || !b.Shares(a) || a.Shares(c) {
		t.Fatal("Shares")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("operators:\n" + entry("alice", "a")))
	f.Add([]byte("operators:\n  - &a {name: x, tokens: []}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(testKind, data)
		if err != nil {
			return
		}
		if len(s.hashes) != len(s.owners) || len(s.hashes) < len(s.names) || len(s.hashes) > testKind.MaxHashes {
			t.Fatalf("%d hashes, %d owners, %d names", len(s.hashes), len(s.owners), len(s.names))
		}
		for i, h := range s.hashes {
			if !s.Holds(h, s.owners[i]) || !testKind.ValidName(s.owners[i]) {
				t.Fatalf("hash %d of %q", i, s.owners[i])
			}
		}
	})
}

// A set that shares a token with another file's set in force is refused,
// and the set in force stays; sets apart are put in force.
func TestDisjoint(t *testing.T) {
	parse := func(list string, names ...string) *Set {
		k := testKind
		k.List = list
		s := list + ":\n"
		for _, n := range names {
			s += entry(n, n+"-token")
		}
		set, err := Parse(k, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	d := NewDisjoint()
	var inForce *Set
	put := func(list string, s *Set) error { return d.Put(list, s, func() { inForce = s }) }
	tenants := parse("tenants", "acme")
	if err := put("tenants", tenants); err != nil {
		t.Fatal(err)
	}
	if err := put("operators", parse("operators", "alice")); err != nil {
		t.Fatal(err)
	}
	shared := parse("operators", "alice", "acme") // acme's token in the operators file
	if err := put("operators", shared); !errors.Is(err, ErrShared) || !strings.Contains(err.Error(), "the operators file lists a token that the tenants file in force lists too") {
		t.Fatalf("a shared token: %v", err)
	}
	if inForce == shared {
		t.Fatal("the refused set was put in force")
	}
	if err := put("tenants", parse("tenants", "acme", "globex")); err != nil {
		t.Fatalf("a reload of the same file: %v", err)
	}
	var nilD *Disjoint
	applied := false
	if err := nilD.Put("x", shared, func() { applied = true }); err != nil || !applied {
		t.Fatal("a nil Disjoint does not put in force")
	}
}

// TestGroups: a kind with groups reads an entry's groups; a kind without
// refuses the field, so a tenants file never grows one.
func TestGroups(t *testing.T) {
	withGroups := testKind
	withGroups.Groups = true
	file := "operators:\n" + entry("alice", "a1") + "    groups: [pay, ops]\n" + entry("bob", "b1")
	s, err := Parse(withGroups, []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if g := s.GroupsOf("alice"); len(g) != 2 || g[0] != "pay" || g[1] != "ops" || s.GroupsOf("bob") != nil {
		t.Fatalf("groups %v, %v", g, s.GroupsOf("bob"))
	}
	if _, err := Parse(testKind, []byte(file)); err == nil || !strings.Contains(err.Error(), `unknown field "groups" (want name, tokens)`) {
		t.Fatalf("a kind without groups: %v", err)
	}
	for bad, want := range map[string]string{
		"    groups: [Pay]\n":               `groups[0]: "Pay" must match`,
		"    groups: pay\n":                 "groups: must be a list",
		"    groups: []\n    groups: [x]\n": "duplicate field groups",
	} {
		if _, err := Parse(withGroups, []byte("operators:\n"+entry("alice", "a1")+bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
}
