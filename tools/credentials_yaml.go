package tools

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// authOf returns s.Auth, made when the file sets headers or tls.
func authOf(s *Spec) *Auth {
	if s.Auth == nil {
		s.Auth = &Auth{}
	}
	return s.Auth
}

// maxHeaders bounds a tool's extra headers: credentials and a few routing
// headers, never a request's worth of them.
const maxHeaders = 32

// decodeHeaders reads headers: a mapping of header name to string value.
func decodeHeaders(n *yaml.Node, dst *map[string]string) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("must be a mapping of header name to value")
	}
	if len(n.Content) > 2*maxHeaders {
		return fmt.Errorf("at most %d headers", maxHeaders)
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := resolve(n.Content[i]), resolve(n.Content[i+1])
		if _, dup := out[key.Value]; dup {
			return fmt.Errorf("%s: %w", quoteBounded(key.Value), errDuplicateField)
		}
		v, err := scalar(val)
		if err != nil {
			return fmt.Errorf("%s: %w", quoteBounded(key.Value), err)
		}
		out[key.Value] = v
	}
	*dst = out
	return nil
}

// decodeTLS reads tls: a mapping with ca, cert and key.
func decodeTLS(n *yaml.Node, dst *TLSFiles) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("must be a mapping with ca, cert and key")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := resolve(n.Content[i]), resolve(n.Content[i+1])
		var p *string
		switch key.Value {
		case "ca":
			p = &dst.CA
		case "cert":
			p = &dst.Cert
		case "key":
			p = &dst.Key
		default:
			return fmt.Errorf("%s: %w (want ca, cert, key)", quoteBounded(key.Value), errUnknownField)
		}
		if err := scalarString(val, p); err != nil {
			return fmt.Errorf("%s: %w", key.Value, err)
		}
	}
	return nil
}
