package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Release is what a release pins in deploy/k8s/components/release.
type Release struct {
	Repository, Version, Digest, Revision string
}

// releaseFields are the lines of the release component that name the
// release, each matched exactly once, and what each becomes.
func (r Release) releaseFields() []struct {
	re   *regexp.Regexp
	with string
} {
	return []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`(?m)^(\s+newName: ).*$`), "${1}" + r.Repository},
		{regexp.MustCompile(`(?m)^(\s+newTag: ).*$`), "${1}" + r.Version},
		{regexp.MustCompile(`(?m)^(\s+digest: )sha256:[0-9a-f]{64}$`), "${1}" + r.Digest},
		{regexp.MustCompile(`(?m)^(\s+app\.kubernetes\.io/version: ).*$`), "${1}" + r.Version},
		{regexp.MustCompile(`(?m)^(\s+value: toolexec-topics-).*$`), "${1}" + strings.ReplaceAll(r.Version, ".", "-")},
		{regexp.MustCompile(`(?m)^(# Built by deploy/image from ).*$`), "${1}" + r.Revision + "."},
	}
}

// writeRelease rewrites the release component at path for r. Every field
// must be found once: a component edited out of shape is refused, never
// half-written.
func writeRelease(path string, r Release) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	for _, f := range r.releaseFields() {
		if n := len(f.re.FindAllStringIndex(s, -1)); n != 1 {
			return fmt.Errorf("%s: %d lines match %s, want 1", path, n, f.re)
		}
		s = f.re.ReplaceAllString(s, f.with)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
