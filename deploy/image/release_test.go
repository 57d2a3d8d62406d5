package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const releaseComponent = "../k8s/components/release/kustomization.yaml"

// The release step rewrites the shipped release component: the image's
// name, tag and digest, the version label, the topics Job's name and the
// revision, each once; and refuses a component it cannot find them in.
func TestWriteRelease(t *testing.T) {
	b, err := os.ReadFile(releaseComponent)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kustomization.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := Release{Repository: "registry.example/toolexec", Version: "9.8.7", Digest: "sha256:" + strings.Repeat("ab", 32), Revision: "feedface"}
	if err := writeRelease(path, r); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	for _, want := range []string{"newName: registry.example/toolexec\n", "newTag: 9.8.7\n", "digest: " + r.Digest + "\n",
		"app.kubernetes.io/version: 9.8.7\n", "value: toolexec-topics-9-8-7\n", "# Built by deploy/image from feedface.\n"} {
		if strings.Count(string(got), want) != 1 {
			t.Errorf("the component has %q %d times, want once:\n%s", want, strings.Count(string(got), want), got)
		}
	}
	broken := strings.Replace(string(b), "newTag:", "tag:", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeRelease(path, r); err == nil {
		t.Error("a component without newTag was rewritten")
	}
	if after, _ := os.ReadFile(path); string(after) != broken {
		t.Error("a refused component was changed")
	}
}
