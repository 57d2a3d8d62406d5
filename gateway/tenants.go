package gateway

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"gopkg.in/yaml.v3"

	"github.com/atmostonce/toolexec/wire"
)

// Limits of a tenants file. Every request compares its token with every
// hash (constant time, no early exit), so the number of hashes bounds the
// work of each request.
const (
	maxTenantsFileBytes = 1 << 20
	maxTenants          = 10000
	maxTokensPerTenant  = 16
	maxTokenHashes      = 20000
	// maxBearerBytes bounds what is hashed per request.
	maxBearerBytes = 4096
)

const tokenHashPrefix = "sha256:"

// Tenants maps bearer tokens, by their SHA-256, to tenants. Immutable once
// built: safe for concurrent use.
type Tenants struct {
	hashes  [][sha256.Size]byte
	owners  []string // owners[i] is the tenant of hashes[i]
	names   []string // tenant names in file order
	present map[string]bool
}

// Authenticate returns the tenant whose token is token. It hashes token
// and compares the hash with every configured hash in constant time,
// without stopping at a match, so the time taken tells nothing about which
// tenant, if any, matched.
func (t *Tenants) Authenticate(token string) (string, bool) {
	if t == nil || token == "" || len(token) > maxBearerBytes {
		return "", false
	}
	h := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.hashes {
		eq := subtle.ConstantTimeCompare(h[:], t.hashes[i][:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return "", false
	}
	return t.owners[match], true
}

// Names lists the tenants in file order.
func (t *Tenants) Names() []string { return append([]string(nil), t.names...) }

// Has reports whether name is a configured tenant.
func (t *Tenants) Has(name string) bool { return t.present[name] }

// SingleTenant serves one tenant with one token: the embedded default.
func SingleTenant(name, token string) (*Tenants, error) {
	if !wire.ValidTenant(name) {
		return nil, fmt.Errorf("%w: tenant %q must match [a-z0-9_-]{1,64}", ErrTenants, name)
	}
	if token == "" || len(token) > maxBearerBytes {
		return nil, fmt.Errorf("%w: the token must be 1 to %d bytes", ErrTenants, maxBearerBytes)
	}
	return &Tenants{hashes: [][sha256.Size]byte{sha256.Sum256([]byte(token))}, owners: []string{name},
		names: []string{name}, present: map[string]bool{name: true}}, nil
}

// HashToken returns the tenants-file form of token: "sha256:<hex>".
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return tokenHashPrefix + hex.EncodeToString(h[:])
}

// LoadTenants reads and parses the tenants file at path. Errors name the
// file and the line.
func LoadTenants(path string) (*Tenants, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTenants, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTenantsFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTenants, path, err)
	}
	t, err := ParseTenants(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTenants parses a tenants file:
//
//	tenants:
//	  - name: acme
//	    tokens: ["sha256:<64 hex digits>"]
//
// Unknown and duplicate fields, duplicate tenants and a token hash listed
// twice (a credential binds to exactly one tenant) are errors, each naming
// its line. The first error is returned.
func ParseTenants(data []byte) (t *Tenants, err error) {
	if len(data) > maxTenantsFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrTenants, maxTenantsFileBytes)
	}
	defer func() { // yaml.v3 has had panics on malformed input
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("%w: invalid YAML: %v", ErrTenants, p)
		}
	}()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty; want a tenants list", ErrTenants)
		}
		return nil, fmt.Errorf("%w: invalid YAML: %w", ErrTenants, err)
	}
	p := &tenantsParser{t: &Tenants{present: map[string]bool{}}, hashAt: map[[sha256.Size]byte]string{}}
	if err := p.document(&doc); err != nil {
		return nil, err
	}
	return p.t, nil
}

// tenantsParser walks the YAML tree. Not safe for concurrent use.
type tenantsParser struct {
	t      *Tenants
	hashAt map[[sha256.Size]byte]string // hash -> where it was first listed
}

func lineErr(n *yaml.Node, where, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	return fmt.Errorf("%w: line %d: %s", ErrTenants, n.Line, msg)
}

func (p *tenantsParser) document(doc *yaml.Node) error {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return lineErr(root, "", "want a mapping with a tenants list")
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case k.Value != "tenants":
			return lineErr(k, "", "unknown field %s (want tenants)", quote(k.Value))
		case list != nil:
			return lineErr(k, "", "duplicate field tenants")
		}
		list = v
	}
	if list == nil {
		return lineErr(root, "", "tenants: required")
	}
	return p.tenants(list)
}

func (p *tenantsParser) tenants(list *yaml.Node) error {
	if list.Kind != yaml.SequenceNode {
		return lineErr(list, "tenants", "must be a list")
	}
	if len(list.Content) > maxTenants {
		return lineErr(list, "tenants", "%d tenants, at most %d allowed", len(list.Content), maxTenants)
	}
	for i, item := range list.Content {
		if err := p.tenant(i, item); err != nil {
			return err
		}
	}
	return nil
}

func (p *tenantsParser) tenant(i int, n *yaml.Node) error {
	where := fmt.Sprintf("tenants[%d]", i)
	if n.Kind != yaml.MappingNode {
		return lineErr(n, where, "must be a mapping with name and tokens")
	}
	var name, tokens *yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		switch {
		case k.Value == "name" && name == nil:
			name = v
		case k.Value == "tokens" && tokens == nil:
			tokens = v
		case k.Value == "name" || k.Value == "tokens":
			return lineErr(k, where, "duplicate field %s", k.Value)
		default:
			return lineErr(k, where, "unknown field %s (want name, tokens)", quote(k.Value))
		}
	}
	if name == nil {
		return lineErr(n, where, "name: required")
	}
	if name.Kind != yaml.ScalarNode || !wire.ValidTenant(name.Value) {
		return lineErr(name, where, "name: %s must match [a-z0-9_-]{1,64}", quote(name.Value))
	}
	where = fmt.Sprintf("%s (%s)", where, name.Value)
	if p.t.present[name.Value] {
		return lineErr(name, where, "name: tenant listed twice")
	}
	if tokens == nil {
		return lineErr(n, where, "tokens: required (at least one)")
	}
	if err := p.tokens(where, name.Value, tokens); err != nil {
		return err
	}
	p.t.present[name.Value] = true
	p.t.names = append(p.t.names, name.Value)
	return nil
}

func (p *tenantsParser) tokens(where, tenant string, list *yaml.Node) error {
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return lineErr(list, where, "tokens: must be a non-empty list")
	}
	if len(list.Content) > maxTokensPerTenant {
		return lineErr(list, where, "tokens: %d tokens, at most %d allowed", len(list.Content), maxTokensPerTenant)
	}
	for i, item := range list.Content {
		at := fmt.Sprintf("%s: tokens[%d]", where, i)
		h, err := parseTokenHash(item)
		if err != nil {
			return lineErr(item, at, "%v", err)
		}
		if first, dup := p.hashAt[h]; dup {
			return lineErr(item, at, "the same token hash is listed at %s: a token binds to exactly one tenant", first)
		}
		if len(p.t.hashes) >= maxTokenHashes {
			return lineErr(item, at, "more than %d token hashes in the file", maxTokenHashes)
		}
		p.hashAt[h] = fmt.Sprintf("line %d", item.Line)
		p.t.hashes, p.t.owners = append(p.t.hashes, h), append(p.t.owners, tenant)
	}
	return nil
}

// parseTokenHash reads "sha256:<64 hex digits>" (either case).
func parseTokenHash(n *yaml.Node) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	if n.Kind != yaml.ScalarNode {
		return h, errors.New(`want "sha256:" and 64 hex digits`)
	}
	v := strings.TrimSpace(n.Value)
	hexPart, ok := strings.CutPrefix(strings.ToLower(v), tokenHashPrefix)
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

// TenantStore holds the tenants in force; Reload swaps them atomically.
// Safe for concurrent use.
type TenantStore struct {
	cur atomic.Pointer[Tenants]
}

// NewTenantStore returns a store serving t.
func NewTenantStore(t *Tenants) *TenantStore {
	s := &TenantStore{}
	s.cur.Store(t)
	return s
}

// Current returns the tenants in force.
func (s *TenantStore) Current() *Tenants { return s.cur.Load() }

// Reload reads path and puts it in force. On any error the tenants in
// force stay as they were, and the error (naming the line) is returned.
func (s *TenantStore) Reload(path string) error {
	t, err := LoadTenants(path)
	if err != nil {
		return err
	}
	s.cur.Store(t)
	return nil
}
