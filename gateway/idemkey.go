package gateway

import (
	"fmt"
	"strings"

	"github.com/atmostonce/toolexec/wire"
)

// parseIdempotencyKey reads the Idempotency-Key header values.
//
// draft-ietf-httpapi-idempotency-key-header makes the field an RFC 8941
// sf-string ("order-42"), but most clients in the wild (Stripe's among
// them) send a bare token (order-42). Both are accepted and name the same
// key: a quoted value is unescaped (\" and \\), a bare value must be
// visible ASCII without '"', '\' or spaces, so that the two forms cannot
// be confused; a key that is not ASCII comes as an RFC 9651 display
// string (%"caf%c3%a9"). The key must then follow the wire's grammar
// (wire.CheckKey). More than one field line is an error: which one would
// be meant?
func parseIdempotencyKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: more than one Idempotency-Key header", ErrIdempotencyKey)
	}
	v := strings.Trim(values[0], " \t")
	var key string
	var err error
	switch {
	case strings.HasPrefix(v, `"`):
		key, err = sfString(v)
	case strings.HasPrefix(v, `%"`):
		key, err = displayString(v)
	default:
		key, err = bareKey(v)
	}
	if err != nil {
		return "", err
	}
	if err := wire.CheckKey(key); err != nil {
		return "", fmt.Errorf("%w: %w", ErrIdempotencyKey, err)
	}
	return key, nil
}

// displayString parses an RFC 9651 Display String: %" then the key's
// UTF-8 with every byte outside visible ASCII (and '%' and '"')
// percent-encoded in lower-case hex, then ". It carries the keys that
// are not ASCII, which a Kafka producer or MCP may use: the key grammar
// is one for every way in (wire.CheckKey).
func displayString(v string) (string, error) {
	var b strings.Builder
	for i := 2; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '%':
			if i+2 >= len(v) || !lowerHexByte(v[i+1]) || !lowerHexByte(v[i+2]) {
				return "", fmt.Errorf(`%w: in a display string %% is followed by two lower-case hex digits`, ErrIdempotencyKey)
			}
			b.WriteByte(unhex(v[i+1])<<4 | unhex(v[i+2]))
			i += 2
		case c == '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: text after the closing quote", ErrIdempotencyKey)
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: a display string holds visible ASCII; percent-encode the rest", ErrIdempotencyKey)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: no closing quote", ErrIdempotencyKey)
}

func lowerHexByte(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// sfString parses an RFC 8941 string: DQUOTE *(unescaped / "\" ( DQUOTE /
// "\" )) DQUOTE, where unescaped is visible ASCII or space.
func sfString(v string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i >= len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf(`%w: in a quoted key only \" and \\ may be escaped`, ErrIdempotencyKey)
			}
			b.WriteByte(v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: text after the closing quote", ErrIdempotencyKey)
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: only visible ASCII and spaces are allowed", ErrIdempotencyKey)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: no closing quote", ErrIdempotencyKey)
}

func bareKey(v string) (string, error) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", fmt.Errorf(`%w: an unquoted key is visible ASCII without spaces, '"' or '\'; quote it as an RFC 8941 string otherwise`, ErrIdempotencyKey)
		}
	}
	return v, nil
}
