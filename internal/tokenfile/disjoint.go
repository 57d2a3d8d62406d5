package tokenfile

import (
	"errors"
	"fmt"
	"sync"
)

// ErrShared is wrapped by a refusal of Disjoint.Put: a token is listed in
// two files (a tenant's gateway token that is also an operator's).
var ErrShared = errors.New("tokenfile: a token is listed in two files")

// Disjoint keeps the token sets of the files of one process apart (the
// gateway's tenants, the console's operators): a credential opens one
// door only. Each file's set in force is put through it, at the start and
// at every reload; a set that shares a token with another file's set in
// force is refused, and that file's set in force stays. The check and the
// swap happen under one lock, so two files reloaded at once (one SIGHUP
// reaches both) cannot both let a shared token in. A nil Disjoint checks
// nothing. Safe for concurrent use.
//
// A token moved from one file to the other takes two reloads in the
// wrong order: the file that gains it is refused while the other still
// lists it. Remove it from the first file, reload, then add it.
type Disjoint struct {
	mu   sync.Mutex
	sets map[string]*Set // by the file's list field: "tenants", "operators"
}

// NewDisjoint returns a Disjoint with no set in force.
func NewDisjoint() *Disjoint { return &Disjoint{sets: map[string]*Set{}} }

// Put puts s in force as the set of the files of list, calling apply under
// the lock, unless s shares a token with another list's set in force: then
// it returns an error wrapping ErrShared (naming the other list) and does
// not call apply.
func (d *Disjoint) Put(list string, s *Set, apply func()) error {
	if d == nil {
		apply()
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for other, o := range d.sets {
		if other != list && s.Shares(o) {
			return fmt.Errorf("%w: the %s file lists a token that the %s file in force lists too: give each its own token", ErrShared, list, other)
		}
	}
	d.sets[list] = s
	apply()
	return nil
}
