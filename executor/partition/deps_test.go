package partition_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreNeedsNoKafkaNorPebble: the core is readable and testable
// without a broker or a store; the loop owns those.
func TestCoreNeedsNoKafkaNorPebble(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "franz-go") || strings.Contains(dep, "pebble") || dep == "github.com/atmostonce/toolexec/state" || dep == "github.com/atmostonce/toolexec/eventlog" {
			t.Errorf("the partition core depends on %s", dep)
		}
	}
}
