package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Release is what a release pins: in deploy/k8s/components/release (the
// image, the version label, the topics Job's name) and in the Helm chart
// (its version and appVersion, the image's digest).
type Release struct {
	Repository, Version, Digest, Revision string
}

// field is one line of a release file that names the release, matched
// exactly once, and what it becomes.
type field struct {
	re   *regexp.Regexp
	with string
}

// releaseFiles are the files a release rewrites, under the repository's
// root, with their fields.
func (r Release) releaseFiles() map[string][]field {
	line := func(prefix, value string) field {
		return field{regexp.MustCompile(`(?m)^(` + prefix + `).*$`), "${1}" + value}
	}
	return map[string][]field{
		"deploy/k8s/components/release/kustomization.yaml": {
			line(`\s+newName: `, r.Repository),
			line(`\s+newTag: `, r.Version),
			line(`\s+digest: `, r.Digest),
			line(`\s+app\.kubernetes\.io/version: `, r.Version),
			line(`\s+value: toolexec-topics-`, strings.ReplaceAll(r.Version, ".", "-")),
			line(`# Built by deploy/image from `, r.Revision+"."),
		},
		"deploy/helm/toolexec/Chart.yaml": {
			line(`version: `, r.Version),
			line(`appVersion: `, r.Version),
		},
		"deploy/helm/toolexec/values.yaml": {
			line(`  repository: `, r.Repository),
			line(`  digest: `, r.Digest),
		},
	}
}

// writeRelease rewrites the release files under root for r. Every field
// of every file must be found once before any file is written: a file
// edited out of shape is refused, and nothing is half-released.
func writeRelease(root string, r Release) error {
	out := map[string][]byte{}
	for rel, fields := range r.releaseFiles() {
		path := filepath.Join(root, rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := string(b)
		for _, f := range fields {
			if n := len(f.re.FindAllStringIndex(s, -1)); n != 1 {
				return fmt.Errorf("%s: %d lines match %s, want 1", path, n, f.re)
			}
			s = f.re.ReplaceAllString(s, f.with)
		}
		out[path] = []byte(s)
	}
	for path, b := range out {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
