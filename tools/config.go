package tools

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// MaxConfigBytes bounds the size of a config given to Parse or Load.
const MaxConfigBytes = 4 << 20

// maxTools bounds the number of tools in one config.
const maxTools = 10000

// Config is the parsed tool configuration. It is plain data: safe for
// concurrent reads, not for concurrent writes.
type Config struct {
	Tools []Spec
}

// Parse decodes YAML of the form {tools: [...]}, fills unset fields with
// the defaults, and validates. Unknown fields, duplicate fields and more
// than one YAML document are errors. It reports every problem it finds,
// joined with errors.Join, each a *FieldError naming its field path.
func Parse(data []byte) (*Config, error) {
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrConfigTooLarge, len(data), MaxConfigBytes)
	}
	doc, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	d := &decoder{bad: map[int]map[string]bool{}}
	cfg := d.config(doc)
	errs := append(d.errs, validateConfig(cfg, d.bad)...)
	if len(errs) > 0 {
		return nil, joinBounded(errs)
	}
	return cfg, nil
}

// maxReportedErrors bounds the errors Parse reports: past that, more
// lines help nobody and a hostile file could make millions.
const maxReportedErrors = 100

// joinBounded orders errs by tools entry, so that one entry's problems are
// read together, and joins at most maxReportedErrors of them.
func joinBounded(errs []error) error {
	slices.SortStableFunc(errs, byToolIndex)
	if n := len(errs); n > maxReportedErrors {
		errs = append(errs[:maxReportedErrors:maxReportedErrors], fmt.Errorf("tools: and %d more errors", n-maxReportedErrors))
	}
	return errors.Join(errs...)
}

// byToolIndex orders errors by the tools entry they concern, top-level
// errors first.
func byToolIndex(a, b error) int {
	return cmp.Compare(errorIndex(a), errorIndex(b))
}

func errorIndex(err error) int {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Index
	}
	return -1
}

// Load reads and parses the config file at path. Errors mention the path.
func Load(path string) (*Config, error) {
	data, err := readFileBounded(path)
	if err != nil {
		return nil, fmt.Errorf("tools: load %s: %w", path, err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tools: load %s: %w", path, err)
	}
	return cfg, nil
}

func readFileBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err == nil && len(data) > MaxConfigBytes {
		err = fmt.Errorf("%w: limit %d bytes", ErrConfigTooLarge, MaxConfigBytes)
	}
	return data, err
}

// Validate checks every spec and the references between them, and reports
// all problems. It does not apply defaults (Parse does): a Spec built in Go
// with a zero Timeout fails here.
func (c *Config) Validate() error {
	if c == nil {
		return ErrNilConfig
	}
	return errors.Join(validateConfig(c, nil)...)
}

// validateConfig checks c; bad lists, per index, the fields that already
// failed to decode and must not be reported again.
func validateConfig(c *Config, bad map[int]map[string]bool) []error {
	names := firstIndexes(c.Tools)
	var errs []error
	for i, s := range c.Tools {
		ch := newChecker(i, s.Name, bad[i])
		checkSpec(ch, s)
		checkDuplicate(ch, s, i, names)
		checkCompensateTarget(ch, s, names)
		errs = append(errs, ch.errs...)
	}
	return errs
}

// firstIndexes maps each tool name to the index of its first use.
func firstIndexes(specs []Spec) map[string]int {
	names := make(map[string]int, len(specs))
	for i, s := range specs {
		if _, ok := names[s.Name]; !ok {
			names[s.Name] = i
		}
	}
	return names
}

// Lookup returns the spec named name.
func (c *Config) Lookup(name string) (Spec, bool) {
	for _, s := range c.Tools {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}
