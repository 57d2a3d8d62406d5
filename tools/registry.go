package tools

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Registry maps tool names to their Spec and Tool. All methods are safe
// for concurrent use; Register is meant for setup, before the Registry is
// shared with the executor.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]entry
}

type entry struct {
	spec Spec
	tool Tool
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]entry{}}
}

// Register adds t under spec.Name. It fills zero fields with defaults (see
// Spec), validates the spec on its own (a URL is not required, and
// compensate_with is not checked against other tools), and refuses a nil
// tool or a name already registered (ErrDuplicateTool).
func (r *Registry) Register(spec Spec, t Tool) error {
	if isNilTool(t) {
		return fmt.Errorf("%w: %s", ErrNilTool, displayName(spec.Name))
	}
	spec = spec.withDefaults()
	c := newChecker(-1, spec.Name, nil)
	checkSpec(c, spec)
	if len(c.errs) > 0 {
		return errors.Join(c.errs...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[spec.Name]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicateTool, spec.Name)
	}
	r.tools[spec.Name] = entry{spec: spec, tool: t}
	return nil
}

func isNilTool(t Tool) bool {
	if t == nil {
		return true
	}
	f, ok := t.(Func)
	return ok && f == nil
}

// Lookup returns the spec and tool registered under name.
func (r *Registry) Lookup(name string) (Spec, Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	return e.spec, e.tool, ok
}

// Specs returns the registered specs sorted by name.
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	specs := make([]Spec, 0, len(r.tools))
	for _, e := range r.tools {
		specs = append(specs, e.spec)
	}
	r.mu.RUnlock()
	slices.SortFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	return specs
}

// FromConfig validates cfg and builds a Registry with an HTTP tool for
// every spec, sharing client (nil: one dedicated client per tool, see
// OpenHTTP). A tool named in inproc (which may be nil) is used instead of
// HTTP, with the file's spec; that is the only way a spec may lack a URL.
// An inproc name with no spec in cfg is an error (ErrUnknownTool), so that
// a misspelt in-process tool cannot go unnoticed. All problems are reported.
func FromConfig(cfg *Config, client *http.Client, inproc map[string]Tool) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	errs := strayInproc(cfg, inproc)
	r := NewRegistry()
	for i, s := range cfg.Tools {
		t, err := toolFor(i, s, client, inproc)
		if err == nil {
			err = r.Register(s, t)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// strayInproc reports in-process tools that no spec names, in name order.
func strayInproc(cfg *Config, inproc map[string]Tool) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(inproc)) {
		if _, ok := cfg.Lookup(name); !ok {
			errs = append(errs, fmt.Errorf("%w: in-process tool %s has no spec in the config", ErrUnknownTool, displayName(name)))
		}
	}
	return errs
}

// toolFor picks the in-process tool for s, or else an HTTP adapter.
func toolFor(i int, s Spec, client *http.Client, inproc map[string]Tool) (Tool, error) {
	if t, ok := inproc[s.Name]; ok {
		if isNilTool(t) {
			return nil, &FieldError{Index: i, Tool: s.Name, Msg: "in-process tool is nil", Err: ErrNilTool}
		}
		return t, nil
	}
	if s.URL == "" {
		return nil, &FieldError{Index: i, Tool: s.Name, Field: "url", Msg: "required: no in-process tool of that name", Err: ErrMissingURL}
	}
	h, err := OpenHTTP(s, client)
	var fe *FieldError
	if errors.As(err, &fe) {
		fe.Index = i
	}
	return h, err
}
