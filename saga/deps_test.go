package saga_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSagaDependsOnTheStandardLibraryOnly: the saga is the pure core of
// the promise, readable and testable without Kafka or a codec.
// Its only import outside the standard library is package codes, the
// wire vocabulary, which is itself a leaf of the standard library.
func TestSagaDependsOnTheStandardLibraryOnly(t *testing.T) {
	for pkg, allowed := range map[string]map[string]bool{
		".":        {"github.com/atmostonce/toolexec/saga": true, "github.com/atmostonce/toolexec/codes": true},
		"../codes": {"github.com/atmostonce/toolexec/codes": true},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if !allowed[dep] {
				t.Errorf("%s depends on %s, which is not the standard library", pkg, dep)
			}
		}
	}
}
