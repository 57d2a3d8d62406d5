package tools

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func okTool() Func {
	return func(context.Context, Request) Outcome { return Outcome{Status: Succeeded, Attempts: 1} }
}

func TestRegistryRegister(t *testing.T) {
	r := NewRegistry()
	if err := r.Register(Spec{Name: "b.tool", Class: ReadOnly}, okTool()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := r.Register(Spec{Name: "a.tool", Class: NativeKey, Retries: 2}, okTool()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	err := r.Register(Spec{Name: "a.tool", Class: ReadOnly}, okTool())
	if !errors.Is(err, ErrDuplicateTool) {
		t.Errorf("duplicate: err = %v, want ErrDuplicateTool", err)
	}
	spec, tool, ok := r.Lookup("b.tool")
	if !ok || tool == nil {
		t.Fatal("Lookup(b.tool) failed")
	}
	wantDefaults := Spec{Name: "b.tool", Class: ReadOnly, Timeout: DefaultTimeout, PendingTTL: DefaultPendingTTL,
		Retention: DefaultRetention, MaxInFlight: DefaultMaxInFlight, MaxArgsBytes: DefaultMaxArgsBytes}
	if !reflect.DeepEqual(spec, wantDefaults) {
		t.Errorf("spec = %+v, want defaults %+v", spec, wantDefaults)
	}
	if _, _, ok := r.Lookup("c.tool"); ok {
		t.Error("Lookup(c.tool) found something")
	}
	specs := r.Specs()
	if len(specs) != 2 || specs[0].Name != "a.tool" || specs[1].Name != "b.tool" || specs[0].Retries != 2 {
		t.Errorf("Specs = %+v, want a.tool (retries 2), b.tool", specs)
	}
}

func TestRegistryRegisterRefuses(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		tool Tool
		want string
	}{
		{"nil tool", Spec{Name: "a", Class: ReadOnly}, nil, "nil tool"},
		{"nil func", Spec{Name: "a", Class: ReadOnly}, Func(nil), "nil tool"},
		{"bad name", Spec{Name: "A B", Class: ReadOnly}, okTool(), `tool "A B": name:`},
		{"bad class", Spec{Name: "a", Class: "x"}, okTool(), "tool a: class: unknown class"},
		{"probe without url", Spec{Name: "a", Class: Probe}, okTool(), "tool a: probe_url: required"},
		{"compensate itself", Spec{Name: "a", Class: Compensatable, CompensateWith: "a"}, okTool(), "compensate_with: must name another tool"},
		{"pending_ttl", Spec{Name: "a", Class: ReadOnly, Timeout: time.Hour}, okTool(), "pending_ttl: must be greater than timeout (1h0m0s)"},
		{"retries", Spec{Name: "a", Class: ReadOnly, Retries: 99}, okTool(), "retries: must be between 0 and 20"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := NewRegistry().Register(tc.spec, tc.tool)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Register(Spec{Name: "t" + string(rune('a'+i)), Class: ReadOnly}, okTool())
			r.Lookup("ta")
			r.Specs()
		}()
	}
	wg.Wait()
	if n := len(r.Specs()); n != 8 {
		t.Errorf("%d specs, want 8", n)
	}
}

const registryConfig = `
tools:
  - name: remote
    class: native_key
    url: %URL%
  - name: local
    class: irreversible
  - name: overridden
    class: read_only
    url: http://127.0.0.1:1/never
`

func TestFromConfig(t *testing.T) {
	ts := newToolServer(t, answer(200, `{"from":"http"}`))
	cfg, err := Parse([]byte(strings.ReplaceAll(registryConfig, "%URL%", ts.URL)))
	if err != nil {
		t.Fatal(err)
	}
	local := Func(func(context.Context, Request) Outcome {
		return Outcome{Status: Succeeded, Result: "local", Attempts: 1}
	})
	over := Func(func(context.Context, Request) Outcome { return Outcome{Status: Succeeded, Result: "over", Attempts: 1} })
	r, err := FromConfig(cfg, nil, map[string]Tool{"local": local, "overridden": over})
	if err != nil {
		t.Fatalf("FromConfig: %v", err)
	}
	want := map[string]any{"remote": map[string]any{"from": "http"}, "local": "local", "overridden": "over"}
	for name, result := range want {
		spec, tool, ok := r.Lookup(name)
		if !ok {
			t.Fatalf("Lookup(%s) failed", name)
		}
		if fileSpec, _ := cfg.Lookup(name); !reflect.DeepEqual(spec, fileSpec) {
			t.Errorf("%s: spec = %+v, want the file's %+v", name, spec, fileSpec)
		}
		out := tool.Invoke(context.Background(), testRequest())
		if out.Status != Succeeded || !reflect.DeepEqual(out.Result, result) {
			t.Errorf("%s: outcome = %+v, want result %v", name, out, result)
		}
	}
	if _, tool, _ := r.Lookup("remote"); tool.(*HTTP) == nil {
		t.Error("remote is not an *HTTP")
	}
}

func TestFromConfigErrors(t *testing.T) {
	cfg, err := Parse([]byte(strings.ReplaceAll(registryConfig, "%URL%", "http://127.0.0.1:1/x")))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cfg    *Config
		inproc map[string]Tool
		want   error
		text   string
	}{
		{"missing url", cfg, nil, ErrMissingURL, "tools[1] (local): url: required"},
		{"stray in-process tool", cfg, map[string]Tool{"local": okTool(), "lokal": okTool()}, ErrUnknownTool, `in-process tool lokal has no spec`},
		{"nil in-process tool", cfg, map[string]Tool{"local": nil}, ErrNilTool, "tools[1] (local): in-process tool is nil"},
		{"nil config", nil, nil, ErrNilConfig, "nil config"},
		{"invalid config", &Config{Tools: []Spec{{Name: "a", Class: ReadOnly}, {Name: "a", Class: ReadOnly}}}, nil, ErrDuplicateTool, "tools[1] (a): name: duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := FromConfig(tc.cfg, http.DefaultClient, tc.inproc)
			if r != nil || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("FromConfig = %v, %v; want %v containing %q", r, err, tc.want, tc.text)
			}
		})
	}
}
