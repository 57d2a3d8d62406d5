package gateway

import (
	"fmt"
	"sync/atomic"

	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/wire"
)

// Limits of a tenants file. Every request compares its token with every
// hash (constant time, no early exit), so the number of hashes bounds the
// work of each request.
const (
	maxTenants         = 10000
	maxTokensPerTenant = 16
	maxTokenHashes     = 20000
)

// tenantsFile is the tenants file's kind: names are tenants as the wire
// spells them.
var tenantsFile = tokenfile.Kind{
	List: "tenants", Item: "tenant", ValidName: wire.ValidTenant, NameRule: "[a-z0-9_-]{1,64}",
	MaxNames: maxTenants, MaxTokens: maxTokensPerTenant, MaxHashes: maxTokenHashes, Err: ErrTenants,
	TopFields: []string{"default_limits"}, EntryFields: []string{"limits"},
}

// Tenants maps bearer tokens, by their SHA-256, to tenants, and tenants
// to their limits. Immutable once built: safe for concurrent use.
type Tenants struct {
	set      *tokenfile.Set
	defaults Limits            // of a tenant without limits of its own
	limits   map[string]Limits // the tenants with limits of their own
}

// Limits returns the tenant's limits: its own, else the file's
// default_limits, else DefaultLimits.
func (t *Tenants) Limits(name string) Limits {
	if l, ok := t.limits[name]; ok {
		return l
	}
	return t.defaults
}

// Authenticate returns the tenant whose token is token. It hashes token
// and compares the hash with every configured hash in constant time,
// without stopping at a match, so the time taken tells nothing about which
// tenant, if any, matched.
func (t *Tenants) Authenticate(token string) (string, bool) {
	if t == nil {
		return "", false
	}
	name, _, ok := t.set.Lookup(token)
	return name, ok
}

// Names lists the tenants in file order.
func (t *Tenants) Names() []string { return t.set.Names() }

// Has reports whether name is a configured tenant.
func (t *Tenants) Has(name string) bool { return t.set.Has(name) }

// Tokens is the set of the tenants' token hashes, for a check that no
// other credential (an operator's) is also a tenant's.
func (t *Tenants) Tokens() *tokenfile.Set { return t.set }

// SingleTenant serves one tenant with one token: the embedded default.
func SingleTenant(name, token string) (*Tenants, error) {
	s, err := tokenfile.Single(tenantsFile, name, token)
	if err != nil {
		return nil, err
	}
	return &Tenants{set: s, defaults: DefaultLimits}, nil
}

// HashToken returns the tenants-file form of token: "sha256:<hex>".
func HashToken(token string) string { return tokenfile.HashToken(token) }

// LoadTenants reads and parses the tenants file at path. Errors name the
// file and the line.
func LoadTenants(path string) (*Tenants, error) {
	lr := &limitsReader{}
	s, err := tokenfile.LoadWith(tenantsFile, path, lr)
	if err != nil {
		return nil, err
	}
	return newTenants(s, lr), nil
}

func newTenants(s *tokenfile.Set, lr *limitsReader) *Tenants {
	def, by := lr.resolve()
	return &Tenants{set: s, defaults: def, limits: by}
}

// ParseTenants parses a tenants file:
//
//	default_limits:              # optional: every tenant's, unless its own
//	  concurrent_calls: 256
//	  calls_per_second: 500
//	  burst: 500
//	tenants:
//	  - name: acme
//	    tokens: ["sha256:<64 hex digits>"]
//	    limits:                  # optional: over default_limits, field by field
//	      concurrent_calls: 16
//
// Unknown and duplicate fields, duplicate tenants, a token hash listed
// twice (a credential binds to exactly one tenant) and a limit out of its
// bounds are errors, each naming its line. The first error is returned.
func ParseTenants(data []byte) (*Tenants, error) {
	lr := &limitsReader{}
	s, err := tokenfile.ParseWith(tenantsFile, data, lr)
	if err != nil {
		return nil, err
	}
	return newTenants(s, lr), nil
}

// TenantStore holds the tenants in force; Reload swaps them atomically.
// Safe for concurrent use.
type TenantStore struct {
	cur   atomic.Pointer[Tenants]
	apart *tokenfile.Disjoint // set once by KeepApart, before any Reload
}

// KeepApart puts the tenants in force through d, now and at every reload
// (tokenfile.Disjoint): tenants that list a token of another file in
// force (the console's operators) are refused, and a reload of them keeps
// the tenants in force. Call it before the store is served.
func (s *TenantStore) KeepApart(d *tokenfile.Disjoint) error {
	if err := d.Put(tenantsFile.List, s.Current().set, func() {}); err != nil {
		return fmt.Errorf("%w: %w", ErrTenants, err)
	}
	s.apart = d
	return nil
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
//
// With KeepApart, tenants that share a token with another file in force
// are refused so (an error wrapping tokenfile.ErrShared).
func (s *TenantStore) Reload(path string) error {
	t, err := LoadTenants(path)
	if err != nil {
		return err
	}
	if err := s.apart.Put(tenantsFile.List, t.set, func() { s.cur.Store(t) }); err != nil {
		return fmt.Errorf("%s: %w: %w", path, ErrTenants, err)
	}
	return nil
}
