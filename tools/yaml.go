package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"gopkg.in/yaml.v3"
)

// Why the config is walked as a yaml.Node tree instead of decoded with
// Decoder.KnownFields(true): KnownFields stops at the first unknown field
// and names it by Go type, not by path. Walking the tree reports every
// unknown, duplicate or ill-typed field with its path and line, and tells
// an unset field (default applies) from an explicit zero (an error for
// max_in_flight, valid for retries).

var (
	errUnknownField   = errors.New("unknown field")
	errDuplicateField = errors.New("duplicate field")
)

// decodeDocument parses data as exactly one YAML document.
func decodeDocument(data []byte) (doc *yaml.Node, err error) {
	// yaml.v3 has had panics on malformed input; a config parser must
	// return an error instead.
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("tools: invalid YAML: decoder panicked: %v", p)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = new(yaml.Node)
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Index: -1, Field: "tools", Msg: "required (the config is empty)"}
		}
		return nil, fmt.Errorf("tools: invalid YAML: %w", err)
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, errors.New("tools: invalid YAML: want exactly one document")
	}
	return doc, nil
}

// decoder turns the node tree into a Config, collecting errors. Not safe
// for concurrent use.
type decoder struct {
	errs []error
	bad  map[int]map[string]bool // per tool index, fields that failed to decode
}

func (d *decoder) topError(field string, n *yaml.Node, msg string) {
	d.errs = append(d.errs, &FieldError{Index: -1, Field: field, Msg: msg, Line: n.Line})
}

func (d *decoder) config(doc *yaml.Node) *Config {
	cfg := &Config{}
	root := resolve(doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	if root.Kind != yaml.MappingNode {
		d.topError("tools", root, "required: the config must be a mapping with a tools list")
		return cfg
	}
	if len(root.Content) > 2*maxFields {
		d.topError("", root, fmt.Sprintf("the config has %d top-level fields, at most %d allowed", len(root.Content)/2, maxFields))
		return cfg
	}
	if !d.topFields(root, cfg) {
		d.topError("tools", root, "required")
	}
	return cfg
}

// topFields decodes the top-level mapping; it reports whether tools was set.
func (d *decoder) topFields(root *yaml.Node, cfg *Config) bool {
	seen := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := resolve(root.Content[i]), root.Content[i+1]
		switch {
		case key.Value != "tools":
			d.topError(fieldLabel(key), key, errUnknownField.Error())
		case seen:
			d.topError("tools", key, errDuplicateField.Error())
		default:
			seen = true
			cfg.Tools = d.tools(resolve(val))
		}
	}
	return seen
}

func (d *decoder) tools(n *yaml.Node) []Spec {
	if n.Kind != yaml.SequenceNode {
		d.topError("tools", n, "must be a list")
		return nil
	}
	if len(n.Content) > maxTools {
		d.topError("tools", n, fmt.Sprintf("more than %d tools", maxTools))
		return nil
	}
	specs := make([]Spec, len(n.Content))
	for i, item := range n.Content {
		specs[i] = d.spec(i, resolve(item))
	}
	return specs
}

// spec decodes one tools entry over the defaults.
func (d *decoder) spec(i int, n *yaml.Node) Spec {
	s := defaultSpec()
	if n.Kind != yaml.MappingNode {
		d.errs = append(d.errs, &FieldError{Index: i, Msg: "must be a mapping", Line: n.Line})
		d.bad[i] = map[string]bool{"name": true, "class": true}
		return s
	}
	errs, bad := decodeFields(&s, n)
	if s.NeedsApproval() && s.ApprovalTTL == 0 {
		s.ApprovalTTL = DefaultApprovalTTL
	}
	for _, e := range errs {
		e.Index, e.Tool = i, s.Name
		d.errs = append(d.errs, e)
	}
	d.bad[i] = bad
	return s
}

// maxFields bounds the keys of one mapping. Why: an anchor holding a huge
// mapping, aliased from every tools entry, would otherwise cost entries ×
// keys work and as many errors; a spec has only twenty fields.
const maxFields = 32

// decodeFields sets the fields of s from the mapping n.
func decodeFields(s *Spec, n *yaml.Node) ([]*FieldError, map[string]bool) {
	if len(n.Content) > 2*maxFields {
		e := &FieldError{Msg: fmt.Sprintf("has %d fields, at most %d allowed", len(n.Content)/2, maxFields), Line: n.Line}
		return []*FieldError{e}, map[string]bool{"name": true, "class": true}
	}
	var errs []*FieldError
	bad := map[string]bool{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := resolve(n.Content[i]), resolve(n.Content[i+1])
		field := fieldLabel(key)
		err := errDuplicateField
		if !seen[key.Value] {
			seen[key.Value] = true
			err = setField(s, field, val)
		}
		if err != nil {
			errs = append(errs, &FieldError{Field: field, Msg: err.Error(), Line: key.Line})
			bad[field] = true
		}
	}
	return errs, bad
}

// fieldLabel names a mapping key for errors: its text if it is a short,
// plain scalar, else a bounded quoted form.
func fieldLabel(key *yaml.Node) string {
	if key.Kind == yaml.ScalarNode && validName(key.Value) && len(key.Value) <= 64 {
		return key.Value
	}
	return quoteBounded(key.Value)
}

// setField decodes n into the field of s named by key.
func setField(s *Spec, key string, n *yaml.Node) error {
	switch key {
	case "name":
		return scalarString(n, &s.Name)
	case "class":
		return scalarString(n, (*string)(&s.Class))
	case "url":
		return scalarString(n, &s.URL)
	case "probe_url":
		return scalarString(n, &s.ProbeURL)
	case "probe_fence":
		return scalarBool(n, &s.ProbeFence)
	case "compensate_with":
		return scalarString(n, &s.CompensateWith)
	case "timeout":
		return scalarDuration(n, &s.Timeout)
	case "pending_ttl":
		return scalarDuration(n, &s.PendingTTL)
	case "retention":
		return scalarDuration(n, &s.Retention)
	case "max_in_flight":
		return scalarInt(n, &s.MaxInFlight)
	case "retries":
		return scalarInt(n, &s.Retries)
	case "max_args_bytes":
		return scalarInt(n, &s.MaxArgsBytes)
	case "headers":
		return decodeHeaders(n, &authOf(s).Headers)
	case "tls":
		return decodeTLS(n, &authOf(s).TLS)
	case "description":
		return scalarString(n, &s.Description)
	case "input_schema":
		return schemaField(n, &s.InputSchema)
	case "tenants":
		return stringList(n, &s.Tenants, maxToolTenants)
	case "approval":
		return scalarString(n, (*string)(&s.Approval))
	case "approval_ttl":
		return positiveDuration(n, &s.ApprovalTTL)
	case "approvers":
		return stringList(n, &s.Approvers, maxApprovers)
	}
	return errUnknownField
}

// positiveDuration decodes a duration that must be greater than 0 (an
// unset one takes its default).
func positiveDuration(n *yaml.Node, dst *time.Duration) error {
	if err := scalarDuration(n, dst); err != nil {
		return err
	}
	if *dst <= 0 {
		return errors.New("must be greater than 0")
	}
	return nil
}

// scalar returns the text of a non-null scalar node.
func scalar(n *yaml.Node) (string, error) {
	switch {
	case n.Kind != yaml.ScalarNode:
		return "", errors.New("must be a single value, not a list or mapping")
	case n.ShortTag() == "!!null":
		return "", errors.New("must not be null")
	}
	return n.Value, nil
}

func scalarString(n *yaml.Node, dst *string) error {
	v, err := scalar(n)
	if err == nil {
		*dst = v
	}
	return err
}

func scalarDuration(n *yaml.Node, dst *time.Duration) error {
	v, err := scalar(n)
	if err != nil {
		return err
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("invalid duration %s: want a Go duration like \"5s\"", quoteBounded(v))
	}
	*dst = dur
	return nil
}

func scalarBool(n *yaml.Node, dst *bool) error {
	if _, err := scalar(n); err != nil {
		return err
	}
	var v bool
	if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return fmt.Errorf("must be true or false, got %s", quoteBounded(n.Value))
	}
	*dst = v
	return nil
}

func scalarInt(n *yaml.Node, dst *int) error {
	if _, err := scalar(n); err != nil {
		return err
	}
	var v int
	if n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return fmt.Errorf("must be an integer, got %s", quoteBounded(n.Value))
	}
	*dst = v
	return nil
}

// resolve follows an alias to the node it names. Why bounded: an anchor
// cannot itself be an alias in valid YAML, but a parser bug must not turn
// into an endless loop.
func resolve(n *yaml.Node) *yaml.Node {
	for range 8 {
		if n.Kind != yaml.AliasNode || n.Alias == nil {
			return n
		}
		n = n.Alias
	}
	return n
}

// stringList decodes a sequence of scalar strings of at most max items.
func stringList(n *yaml.Node, dst *[]string, max int) error {
	if n.Kind != yaml.SequenceNode {
		return errors.New("must be a list")
	}
	if len(n.Content) > max {
		return fmt.Errorf("has %d items, at most %d allowed", len(n.Content), max)
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		v, err := scalar(resolve(item))
		if err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, v)
	}
	*dst = out
	return nil
}
