// Package tokenfile reads the files that bind bearer tokens to names, the
// gateway's tenants file and the console's operators file:
//
//	<list>:
//	  - name: <name>
//	    tokens: ["sha256:<64 hex digits>"]
//	    groups: [<group>, ...]     # a Kind with Groups only (operators)
//
// Only SHA-256 hashes of tokens are stored, and a token is checked against
// every hash in constant time (Set.Lookup), so neither the file nor the
// time a check takes gives a token away. A Set is immutable once parsed.
package tokenfile

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxTokenBytes bounds what is hashed per check: a longer token is never
// valid.
const MaxTokenBytes = 4096

// maxFileBytes bounds what a file may hold.
const maxFileBytes = 1 << 20

// HashPrefix starts every token hash in a file.
const HashPrefix = "sha256:"

// Hash is the SHA-256 of a token: what a file lists and a session keeps.
type Hash = [sha256.Size]byte

// Kind describes one kind of file: its list's field, what its entries are
// called in messages, the names it accepts, its bounds, and the sentinel
// every error wraps. Every check of a request compares the token with
// every hash, so MaxHashes bounds the work of each request.
//
// A kind may allow fields of its own (ParseWith): TopFields beside the
// list, EntryFields beside name, tokens and groups. Any other field is an
// error, as is a field given twice.
type Kind struct {
	List      string // the top-level field: "tenants", "operators"
	Item      string // one entry, in messages: "tenant", "operator"
	ValidName func(string) bool
	NameRule  string // ValidName in words, for messages
	MaxNames  int
	MaxTokens int // per name
	MaxHashes int
	Err       error
	// Groups allows an entry's optional groups list (names of the same
	// grammar, at most MaxGroups): who may approve a tool's calls names
	// operators or their groups.
	Groups bool
	// TopFields and EntryFields are the extra fields a Fields reader takes.
	TopFields, EntryFields []string
}

// MaxGroups bounds an entry's groups.
const MaxGroups = 32

// Fields reads a kind's extra fields as Parse meets them, each once: Top
// a top-level field beside the list, Entry a field of the named entry
// beside name and tokens (after the name was checked). An error refuses
// the file; a *NodeError names the line of its own node, any other error
// the line of the field's value.
type Fields interface {
	Top(field string, value *yaml.Node) error
	Entry(name, field string, value *yaml.Node) error
}

// NodeError is a Fields error about one node, for its line.
type NodeError struct {
	Node *yaml.Node
	Msg  string
}

func (e *NodeError) Error() string { return e.Msg }

// Set maps token hashes to names. Immutable: safe for concurrent use.
type Set struct {
	hashes  []Hash
	owners  []string // owners[i] is the name of hashes[i]
	names   []string // in file order
	present map[string]bool
	groups  map[string][]string // by name, when the kind has groups
}

// GroupsOf lists the groups of name, in file order; nil when none.
func (s *Set) GroupsOf(name string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.groups[name]...)
}

// Lookup returns the name whose token is token, and the token's hash. It
// hashes token and compares the hash with every listed hash in constant
// time, without stopping at a match, so the time taken tells nothing about
// which name, if any, matched.
func (s *Set) Lookup(token string) (string, Hash, bool) {
	if s == nil || token == "" || len(token) > MaxTokenBytes {
		return "", Hash{}, false
	}
	h := sha256.Sum256([]byte(token))
	name, ok := s.owner(h)
	return name, h, ok
}

// Holds reports whether h is still listed, for name: a session made with
// a token stays valid only while its hash does.
func (s *Set) Holds(h Hash, name string) bool {
	owner, ok := s.owner(h)
	return ok && owner == name
}

func (s *Set) owner(h Hash) (string, bool) {
	if s == nil {
		return "", false
	}
	match := -1
	for i := range s.hashes {
		eq := subtle.ConstantTimeCompare(h[:], s.hashes[i][:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return "", false
	}
	return s.owners[match], true
}

// Names lists the names in file order.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Has reports whether name is listed.
func (s *Set) Has(name string) bool { return s.present[name] }

// Shares reports whether a token hash is listed in both s and o: the
// caller decides whether that is allowed (a tenant's token must never be
// an operator's).
func (s *Set) Shares(o *Set) bool {
	if s == nil || o == nil {
		return false
	}
	for _, h := range s.hashes {
		if _, ok := o.owner(h); ok {
			return true
		}
	}
	return false
}

// Single is a set of one name with one token.
func Single(kind Kind, name, token string) (*Set, error) {
	if !kind.ValidName(name) {
		return nil, fmt.Errorf("%w: %s %q must match %s", kind.Err, kind.Item, name, kind.NameRule)
	}
	if token == "" || len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: the token must be 1 to %d bytes", kind.Err, MaxTokenBytes)
	}
	return &Set{hashes: []Hash{sha256.Sum256([]byte(token))}, owners: []string{name},
		names: []string{name}, present: map[string]bool{name: true}}, nil
}

// HashToken returns the file form of token: "sha256:<hex>".
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return HashPrefix + hex.EncodeToString(h[:])
}

// Load reads and parses the file at path. Errors name the file and the
// line.
func Load(kind Kind, path string) (*Set, error) { return LoadWith(kind, path, nil) }

// LoadWith is Load for a kind with fields of its own, which fields reads.
func LoadWith(kind Kind, path string, fields Fields) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kind.Err, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", kind.Err, path, err)
	}
	s, err := ParseWith(kind, data, fields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse parses a file of kind. Unknown and duplicate fields, duplicate
// names and a token hash listed twice (a credential binds to exactly one
// name) are errors, each naming its line. The first error is returned.
func Parse(kind Kind, data []byte) (*Set, error) { return ParseWith(kind, data, nil) }

// ParseWith is Parse for a kind with fields of its own, which f reads.
func ParseWith(kind Kind, data []byte, f Fields) (s *Set, err error) {
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", kind.Err, maxFileBytes)
	}
	defer func() { // yaml.v3 has had panics on malformed input
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("%w: invalid YAML: %v", kind.Err, p)
		}
	}()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty; want a %s list", kind.Err, kind.List)
		}
		return nil, fmt.Errorf("%w: invalid YAML: %w", kind.Err, err)
	}
	p := &parser{kind: kind, fields: f, s: &Set{present: map[string]bool{}}, hashAt: map[Hash]string{}}
	if err := p.document(&doc); err != nil {
		return nil, err
	}
	return p.s, nil
}

// parser walks the YAML tree. Not safe for concurrent use.
type parser struct {
	kind   Kind
	fields Fields
	s      *Set
	hashAt map[Hash]string // hash -> where it was first listed
}

func (p *parser) lineErr(n *yaml.Node, where, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	return fmt.Errorf("%w: line %d: %s", p.kind.Err, n.Line, msg)
}

func (p *parser) document(doc *yaml.Node) error {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return p.lineErr(root, "", "want a mapping with a %s list", p.kind.List)
	}
	var list *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case seen[k.Value]:
			return p.lineErr(k, "", "duplicate field %s", k.Value)
		case k.Value == p.kind.List:
			list = v
		case slices.Contains(p.kind.TopFields, k.Value) && p.fields != nil:
			if err := p.extra(v, "", p.fields.Top(k.Value, v)); err != nil {
				return err
			}
		default:
			return p.lineErr(k, "", "unknown field %s (want %s)", quote(k.Value), strings.Join(append([]string{p.kind.List}, p.kind.TopFields...), ", "))
		}
		seen[k.Value] = true
	}
	if list == nil {
		return p.lineErr(root, "", "%s: required", p.kind.List)
	}
	return p.entries(list)
}

// extra turns the error of a Fields reader into one naming its line.
func (p *parser) extra(v *yaml.Node, where string, err error) error {
	if err == nil {
		return nil
	}
	var ne *NodeError
	if errors.As(err, &ne) && ne.Node != nil {
		return p.lineErr(ne.Node, where, "%s", ne.Msg)
	}
	return p.lineErr(v, where, "%v", err)
}

func (p *parser) entries(list *yaml.Node) error {
	if list.Kind != yaml.SequenceNode {
		return p.lineErr(list, p.kind.List, "must be a list")
	}
	if len(list.Content) > p.kind.MaxNames {
		return p.lineErr(list, p.kind.List, "%d %s, at most %d allowed", len(list.Content), p.kind.List, p.kind.MaxNames)
	}
	for i, item := range list.Content {
		if err := p.entry(i, item); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) entry(i int, n *yaml.Node) error {
	where := fmt.Sprintf("%s[%d]", p.kind.List, i)
	if n.Kind != yaml.MappingNode {
		return p.lineErr(n, where, "must be a mapping with name and tokens")
	}
	name, tokens, groups, extras, err := p.entryFields(where, n)
	if err != nil {
		return err
	}
	if name == nil {
		return p.lineErr(n, where, "name: required")
	}
	if name.Kind != yaml.ScalarNode || !p.kind.ValidName(name.Value) {
		return p.lineErr(name, where, "name: %s must match %s", quote(name.Value), p.kind.NameRule)
	}
	where = fmt.Sprintf("%s (%s)", where, name.Value)
	if p.s.present[name.Value] {
		return p.lineErr(name, where, "name: %s listed twice", p.kind.Item)
	}
	if tokens == nil {
		return p.lineErr(n, where, "tokens: required (at least one)")
	}
	if err := p.tokens(where, name.Value, tokens); err != nil {
		return err
	}
	if err := p.groupList(where, name.Value, groups); err != nil {
		return err
	}
	for i := 0; i+1 < len(extras); i += 2 {
		k, v := extras[i], extras[i+1]
		if err := p.extra(v, where+": "+k.Value, p.fields.Entry(name.Value, k.Value, v)); err != nil {
			return err
		}
	}
	p.s.present[name.Value] = true
	p.s.names = append(p.s.names, name.Value)
	return nil
}

// entryFields finds an entry's name, tokens and groups, and its extra
// fields as key and value pairs.
func (p *parser) entryFields(where string, n *yaml.Node) (name, tokens, groups *yaml.Node, extras []*yaml.Node, err error) {
	want := []string{"name", "tokens"}
	if p.kind.Groups {
		want = append(want, "groups")
	}
	want = append(want, p.kind.EntryFields...)
	seen := map[string]bool{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		switch {
		case seen[k.Value]:
			return nil, nil, nil, nil, p.lineErr(k, where, "duplicate field %s", k.Value)
		case k.Value == "name":
			name = v
		case k.Value == "tokens":
			tokens = v
		case k.Value == "groups" && p.kind.Groups:
			groups = v
		case slices.Contains(p.kind.EntryFields, k.Value) && p.fields != nil:
			extras = append(extras, k, v)
		default:
			return nil, nil, nil, nil, p.lineErr(k, where, "unknown field %s (want %s)", quote(k.Value), strings.Join(want, ", "))
		}
		seen[k.Value] = true
	}
	return name, tokens, groups, extras, nil
}

// groupList reads an entry's groups (none when the node is nil).
func (p *parser) groupList(where, name string, list *yaml.Node) error {
	if list == nil {
		return nil
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) > MaxGroups {
		return p.lineErr(list, where, "groups: must be a list of at most %d names", MaxGroups)
	}
	for i, item := range list.Content {
		if item.Kind != yaml.ScalarNode || !p.kind.ValidName(item.Value) {
			return p.lineErr(item, fmt.Sprintf("%s: groups[%d]", where, i), "%s must match %s", quote(item.Value), p.kind.NameRule)
		}
		if p.s.groups == nil {
			p.s.groups = map[string][]string{}
		}
		p.s.groups[name] = append(p.s.groups[name], item.Value)
	}
	return nil
}

func (p *parser) tokens(where, name string, list *yaml.Node) error {
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return p.lineErr(list, where, "tokens: must be a non-empty list")
	}
	if len(list.Content) > p.kind.MaxTokens {
		return p.lineErr(list, where, "tokens: %d tokens, at most %d allowed", len(list.Content), p.kind.MaxTokens)
	}
	for i, item := range list.Content {
		at := fmt.Sprintf("%s: tokens[%d]", where, i)
		h, err := parseHash(item)
		if err != nil {
			return p.lineErr(item, at, "%v", err)
		}
		if first, dup := p.hashAt[h]; dup {
			return p.lineErr(item, at, "the same token hash is listed at %s: a token binds to exactly one %s", first, p.kind.Item)
		}
		if len(p.s.hashes) >= p.kind.MaxHashes {
			return p.lineErr(item, at, "more than %d token hashes in the file", p.kind.MaxHashes)
		}
		p.hashAt[h] = fmt.Sprintf("line %d", item.Line)
		p.s.hashes, p.s.owners = append(p.s.hashes, h), append(p.s.owners, name)
	}
	return nil
}

// parseHash reads "sha256:<64 hex digits>" (either case).
func parseHash(n *yaml.Node) (Hash, error) {
	var h Hash
	if n.Kind != yaml.ScalarNode {
		return h, errors.New(`want "sha256:" and 64 hex digits`)
	}
	v := strings.TrimSpace(n.Value)
	hexPart, ok := strings.CutPrefix(strings.ToLower(v), HashPrefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return h, errors.New(`want "sha256:" and 64 hex digits (the SHA-256 of the token, never the token itself)`)
	}
	if _, err := hex.Decode(h[:], []byte(hexPart)); err != nil {
		return h, errors.New(`want "sha256:" and 64 hex digits: not hexadecimal`)
	}
	return h, nil
}

// quote shows a YAML value in an error, bounded, so a hostile file cannot
// flood the log.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// OnSignal calls reload on every sig (SIGHUP by convention), one at a
// time on a goroutine of its own, until stop is called: how a process
// puts a rotated file in force.
func OnSignal(reload func(), sig ...os.Signal) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				reload()
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
