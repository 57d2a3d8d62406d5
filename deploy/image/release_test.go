package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyRelease copies the shipped release files under a temporary root.
func copyRelease(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for rel := range (Release{}).releaseFiles() {
		b, err := os.ReadFile(filepath.Join("../..", rel))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The release step rewrites the shipped release files: the component's
// image name, tag and digest, version label, topics Job name and
// revision, the chart's versions and digest, each once; and refuses, all
// files untouched, when one of them lacks a field.
func TestWriteRelease(t *testing.T) {
	root := copyRelease(t)
	r := Release{Repository: "registry.example/toolexec", Version: "9.8.7", Digest: "sha256:" + strings.Repeat("ab", 32), Revision: "feedface"}
	if err := writeRelease(root, r); err != nil {
		t.Fatal(err)
	}
	for rel, wants := range map[string][]string{
		"deploy/k8s/components/release/kustomization.yaml": {"newName: registry.example/toolexec\n", "newTag: 9.8.7\n", "digest: " + r.Digest + "\n",
			"app.kubernetes.io/version: 9.8.7\n", "value: toolexec-topics-9-8-7\n", "# Built by deploy/image from feedface.\n"},
		"deploy/helm/toolexec/Chart.yaml":  {"\nversion: 9.8.7\n", "\nappVersion: 9.8.7\n"},
		"deploy/helm/toolexec/values.yaml": {"  repository: registry.example/toolexec\n", "  digest: " + r.Digest + "\n"},
	} {
		got, _ := os.ReadFile(filepath.Join(root, rel))
		for _, want := range wants {
			if strings.Count(string(got), want) != 1 {
				t.Errorf("%s has %q %d times, want once", rel, want, strings.Count(string(got), want))
			}
		}
	}
	root = copyRelease(t)
	chart := filepath.Join(root, "deploy/helm/toolexec/Chart.yaml")
	b, _ := os.ReadFile(chart)
	os.WriteFile(chart, []byte(strings.Replace(string(b), "appVersion:", "app:", 1)), 0o644)
	if err := writeRelease(root, r); err == nil {
		t.Fatal("a chart without appVersion was released")
	}
	component, _ := os.ReadFile(filepath.Join(root, "deploy/k8s/components/release/kustomization.yaml"))
	if strings.Contains(string(component), "9.8.7") {
		t.Error("a refused release changed the component")
	}
}
