//go:build invariants || race

package invariants

// Enabled is true in builds with -tags invariants or -race.
const Enabled = true
