// Package defaults fills the fields of a configuration left at their zero
// value. The executor's and the reconciler's Config both document a
// default per field and apply it in Validate; this is the one way they do.
package defaults

// Set stores v in *p when *p is the zero value of its type: a field the
// caller left unset takes its documented default, one it set is kept.
func Set[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
