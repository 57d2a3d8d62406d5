package tools

import "testing"

// FuzzParse checks that Parse never panics and that whatever it accepts
// passes Validate.
func FuzzParse(f *testing.F) {
	seeds := []string{
		fullConfig, "", "tools: []", "tools:\n  - name: a\n    class: read_only\n",
		"tools: [{name: a, class: probe, probe_url: 'http://x'}]",
		"tools:\n  - &x {name: a, class: read_only}\n  - *x\n",
		"tools: [{<<: {name: a}}]", "tools: [{timeout: -5s, retries: 99999999999999999999}]",
		"a: &a [*a]", "tools: !!binary aGVsbG8=", "%YAML 1.2\n---\ntools: []\n...\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			_ = err.Error()
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate rejects: %v", err)
		}
	})
}
