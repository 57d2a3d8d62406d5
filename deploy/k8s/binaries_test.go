package k8s

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

var (
	binariesOnce sync.Once
	binariesDir  string
	binariesErr  string
)

// binaries builds cmd/executor, cmd/reconciler and cmd/gateway once for
// the package's tests (their flags are checked against the manifests, and
// the dev pod's process is started) and returns their directory, removed
// by TestMain.
func binaries(t *testing.T) string {
	t.Helper()
	binariesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolexec-k8s-bin-")
		if err != nil {
			binariesErr = err.Error()
			return
		}
		binariesDir = dir
		build := exec.Command("go", "build", "-o", dir+"/", "./cmd/executor", "./cmd/reconciler", "./cmd/gateway")
		build.Dir = "../.."
		if out, err := build.CombinedOutput(); err != nil {
			binariesErr = "build the binaries: " + err.Error() + "\n" + string(out)
		}
	})
	if binariesErr != "" {
		t.Fatal(binariesErr)
	}
	return binariesDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binariesDir != "" {
		os.RemoveAll(binariesDir)
	}
	os.Exit(code)
}
