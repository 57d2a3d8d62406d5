// Package secretref expands the references to secrets that configuration
// values may hold, so that the secrets themselves stay out of the files
// that are checked in, copied around and printed:
//
//	${env:NAME}   the value of the environment variable NAME
//	${file:PATH}  the content of the file PATH, without its trailing newlines
//
// A reference may stand anywhere in a value ("Bearer ${env:TOKEN}"), and a
// value may hold several. A variable that is not set, or a file that cannot
// be read, is an error that names the reference (never its content). "$$"
// is a literal "$". Anything else is left as written.
//
// The expanded values are secrets: callers keep them out of logs, events,
// answers and error texts (see Redact).
package secretref

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrRef is wrapped by every expansion error.
var ErrRef = errors.New("secret reference")

// MaxFileBytes bounds a ${file:} reference: a credential is a token, a
// password or a PEM block, never megabytes; a larger file is a wrong path.
const MaxFileBytes = 1 << 20

// Lookup finds an environment variable; os.LookupEnv in production.
type Lookup func(name string) (string, bool)

// Expand replaces every reference in s, reading the environment with
// os.LookupEnv.
func Expand(s string) (string, error) { return ExpandWith(s, os.LookupEnv) }

// ExpandWith is Expand with a given environment.
func ExpandWith(s string, env Lookup) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "$$"):
			b.WriteByte('$')
			s = s[2:]
		case strings.HasPrefix(s, "${"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", fmt.Errorf("%w: unterminated %q", ErrRef, clip(s))
			}
			v, err := resolve(s[2:end], env)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			s = s[end+1:]
		default:
			b.WriteByte('$')
			s = s[1:]
		}
	}
}

func resolve(ref string, env Lookup) (string, error) {
	kind, arg, ok := strings.Cut(ref, ":")
	if !ok || arg == "" {
		return "", fmt.Errorf("%w: ${%s}: want ${env:NAME} or ${file:PATH}", ErrRef, ref)
	}
	switch kind {
	case "env":
		v, ok := env(arg)
		if !ok {
			return "", fmt.Errorf("%w: ${env:%s}: the environment variable %s is not set", ErrRef, arg, arg)
		}
		return v, nil
	case "file":
		return readFile(arg)
	}
	return "", fmt.Errorf("%w: ${%s}: unknown kind %q (want env or file)", ErrRef, ref, kind)
}

func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: ${file:%s}: %w", ErrRef, path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: ${file:%s}: %w", ErrRef, path, err)
	}
	if len(b) > MaxFileBytes {
		return "", fmt.Errorf("%w: ${file:%s}: larger than %d bytes", ErrRef, path, MaxFileBytes)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
