package invariants

import "testing"

// Under the tag (or -race) a false check panics with its message; without
// it nothing happens.
func TestCheck(t *testing.T) {
	Check(true, "never")
	defer func() {
		r := recover()
		if Enabled && r != "invariant violated: count -1" {
			t.Fatalf("enabled: recovered %v, want the message", r)
		}
		if !Enabled && r != nil {
			t.Fatalf("disabled: recovered %v", r)
		}
	}()
	Check(false, "count %d", -1)
}
