package secretref

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestExpandReplacesEnvAndFileReferences(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pw")
	if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ExpandWith("Bearer ${env:TOK}/${file:"+p+"} $$5 $x", env(map[string]string{"TOK": "abc"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Bearer abc/s3cret $5 $x"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestExpandErrorsNameTheReferenceNotTheSecret(t *testing.T) {
	cases := []struct{ in, want string }{
		{"${env:MISSING}", "${env:MISSING}: the environment variable MISSING is not set"},
		{"${file:/nonexistent/x}", "${file:/nonexistent/x}: open /nonexistent/x: no such file or directory"},
		{"${vault:x}", "unknown kind"},
		{"${env:}", "want ${env:NAME}"},
		{"${env:X", "unterminated"},
	}
	for _, c := range cases {
		_, err := ExpandWith(c.in, env(nil))
		if err == nil || !errors.Is(err, ErrRef) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

func TestExpandRefusesAHugeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Expand("${file:" + p + "}"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error %v, want larger than", err)
	}
}

func TestRedactorReplacesSecretsAndTheTokenOfABearerValue(t *testing.T) {
	r := NewRedactor("Bearer tok-123456", "", "ab")
	got := r.Redact(`401: {"echo":"tok-123456"} header Bearer tok-123456 ab`)
	if strings.Contains(got, "tok-123456") || !strings.Contains(got, " ab") {
		t.Fatalf("redacted %q", got)
	}
	var nilR *Redactor
	if nilR.Redact("x") != "x" || !nilR.Empty() {
		t.Fatal("a nil redactor must redact nothing")
	}
}
