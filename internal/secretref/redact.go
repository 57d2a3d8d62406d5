package secretref

import "strings"

// Redacted stands where a secret was.
const Redacted = "[REDACTED]"

// minSecretLen: shorter values are not redacted, because replacing every
// "a" or "1" in a text destroys it without protecting anything (a secret
// that short is guessed, not read).
const minSecretLen = 4

// Redactor replaces known secret values in texts. The zero value redacts
// nothing. Safe for concurrent use once built.
type Redactor struct {
	secrets []string
}

// NewRedactor redacts the given values (empty and very short ones are
// ignored).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.add(s)
	}
	return r
}

func (r *Redactor) add(s string) {
	if len(s) < minSecretLen {
		return
	}
	r.secrets = append(r.secrets, s)
	// A header value "Bearer <token>" is also sent, and echoed, as the
	// token alone: redact its last word too.
	if i := strings.LastIndexByte(s, ' '); i >= 0 && len(s)-i-1 >= minSecretLen {
		r.secrets = append(r.secrets, s[i+1:])
	}
}

// Redact returns s with every known secret replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// Empty reports whether there is nothing to redact.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }
