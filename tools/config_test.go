package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const fullConfig = `
tools:
  - name: payments.charge
    class: native_key
    url: https://pay.example/charge
    timeout: 3s
    pending_ttl: 1m
    retention: 48h
    max_in_flight: 10
    retries: 5
    max_args_bytes: 1024
  - name: payments.refund
    class: compensatable
    url: http://pay.example/refund
    compensate_with: payments.charge
  - name: orders.create
    class: probe
    url: http://orders.example/create
    probe_url: http://orders.example/status?v=1
  - name: mail.send
    class: irreversible
    url: http://mail.example/send
    retries: 0
  - name: search
    class: read_only
`

func TestParseFull(t *testing.T) {
	cfg, err := Parse([]byte(fullConfig))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Spec{
		{Name: "payments.charge", Class: NativeKey, URL: "https://pay.example/charge", Timeout: 3 * time.Second,
			PendingTTL: time.Minute, Retention: 48 * time.Hour, MaxInFlight: 10, Retries: 5, MaxArgsBytes: 1024},
		{Name: "payments.refund", Class: Compensatable, URL: "http://pay.example/refund", CompensateWith: "payments.charge",
			Timeout: 5 * time.Second, PendingTTL: 2 * time.Minute, Retention: 24 * time.Hour, MaxInFlight: 64, Retries: 3, MaxArgsBytes: 65536},
		{Name: "orders.create", Class: Probe, URL: "http://orders.example/create", ProbeURL: "http://orders.example/status?v=1",
			Timeout: 5 * time.Second, PendingTTL: 2 * time.Minute, Retention: 24 * time.Hour, MaxInFlight: 64, Retries: 3, MaxArgsBytes: 65536},
		{Name: "mail.send", Class: Irreversible, URL: "http://mail.example/send",
			Timeout: 5 * time.Second, PendingTTL: 2 * time.Minute, Retention: 24 * time.Hour, MaxInFlight: 64, Retries: 0, MaxArgsBytes: 65536},
		{Name: "search", Class: ReadOnly,
			Timeout: 5 * time.Second, PendingTTL: 2 * time.Minute, Retention: 24 * time.Hour, MaxInFlight: 64, Retries: 3, MaxArgsBytes: 65536},
	}
	if !reflect.DeepEqual(cfg.Tools, want) {
		t.Fatalf("Tools:\n got %+v\nwant %+v", cfg.Tools, want)
	}
	if s, ok := cfg.Lookup("mail.send"); !ok || s.Class != Irreversible {
		t.Errorf("Lookup(mail.send) = %+v, %v", s, ok)
	}
	if _, ok := cfg.Lookup("nope"); ok {
		t.Error("Lookup(nope) found something")
	}
}

// tool renders one tools entry with a valid base plus extra lines.
func tool(lines ...string) string {
	return "  - " + strings.Join(lines, "\n    ") + "\n"
}

func TestParseErrors(t *testing.T) {
	base := "name: a\n    class: read_only"
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error text
	}{
		{"missing name", "tools:\n" + tool("class: read_only"), []string{"tools[0]: name: required"}},
		{"bad name", "tools:\n" + tool("name: Bad Name", "class: read_only"), []string{`tools[0] ("Bad Name"): name:`, "[a-z0-9._-]"}},
		{"bad class", "tools:\n" + tool("name: a", "class: magic"), []string{`tools[0] (a): class: unknown class "magic"`}},
		{"missing class", "tools:\n" + tool("name: a"), []string{"tools[0] (a): class: required"}},
		{"probe without probe_url", "tools:\n" + tool("name: a", "class: probe"), []string{"tools[0] (a): probe_url: required for class probe"}},
		{"probe_url on other class", "tools:\n" + tool(base, "probe_url: http://x/s"), []string{"tools[0] (a): probe_url: only allowed for class probe"}},
		{"bad probe_url", "tools:\n" + tool("name: a", "class: probe", "probe_url: ftp://x/s"), []string{"tools[0] (a): probe_url:", "http or https"}},
		{"compensate_with missing tool", "tools:\n" + tool("name: a", "class: compensatable", "compensate_with: b"),
			[]string{`tools[0] (a): compensate_with: names "b", which is not a tool`}},
		{"compensate_with itself", "tools:\n" + tool("name: a", "class: compensatable", "compensate_with: a"),
			[]string{"tools[0] (a): compensate_with: must name another tool"}},
		{"compensatable without compensate_with", "tools:\n" + tool("name: a", "class: compensatable"),
			[]string{"tools[0] (a): compensate_with: required"}},
		{"compensate_with on other class", "tools:\n" + tool(base) + tool("name: b", "class: irreversible", "compensate_with: a"),
			[]string{"tools[1] (b): compensate_with: only allowed for class compensatable"}},
		{"pending_ttl equal timeout", "tools:\n" + tool(base) + tool("name: payments.refund", "class: read_only", "pending_ttl: 5s"),
			[]string{"tools[1] (payments.refund): pending_ttl: must be greater than timeout (5s)"}},
		{"pending_ttl below timeout", "tools:\n" + tool(base, "timeout: 10s", "pending_ttl: 9s"),
			[]string{"tools[0] (a): pending_ttl: must be greater than timeout (10s)"}},
		{"retention below pending_ttl", "tools:\n" + tool(base, "retention: 1m"),
			[]string{"tools[0] (a): retention: must be at least pending_ttl (2m0s)"}},
		{"zero timeout", "tools:\n" + tool(base, "timeout: 0s"), []string{"tools[0] (a): timeout: must be greater than 0"}},
		{"max_in_flight 0", "tools:\n" + tool(base, "max_in_flight: 0"), []string{"tools[0] (a): max_in_flight: must be between 1 and 10000"}},
		{"max_in_flight too big", "tools:\n" + tool(base, "max_in_flight: 10001"), []string{"tools[0] (a): max_in_flight:"}},
		{"retries too many", "tools:\n" + tool(base, "retries: 21"), []string{"tools[0] (a): retries: must be between 0 and 20"}},
		{"negative retries", "tools:\n" + tool(base, "retries: -1"), []string{"tools[0] (a): retries:"}},
		{"max_args_bytes 0", "tools:\n" + tool(base, "max_args_bytes: 0"), []string{"tools[0] (a): max_args_bytes:"}},
		{"max_args_bytes too big", "tools:\n" + tool(base, "max_args_bytes: 1048577"), []string{"tools[0] (a): max_args_bytes:"}},
		{"string for int", "tools:\n" + tool(base, `retries: "3"`), []string{"tools[0] (a): retries: must be an integer"}},
		{"unknown field", "tools:\n" + tool(base, "colour: red"), []string{"tools[0] (a): colour: unknown field"}},
		{"unknown top-level field", "tools: []\nextra: 1\n", []string{"extra: unknown field"}},
		{"duplicate field", "tools:\n" + tool(base, "name: b"), []string{"tools[0] (a): name: duplicate field"}},
		{"duplicate name", "tools:\n" + tool(base) + tool(base), []string{"tools[1] (a): name: duplicate of tools[0]"}},
		{"bad duration", "tools:\n" + tool(base, "timeout: 5 seconds"), []string{`tools[0] (a): timeout: invalid duration "5 seconds"`}},
		{"duration without unit", "tools:\n" + tool(base, "pending_ttl: 30"), []string{"tools[0] (a): pending_ttl: invalid duration"}},
		{"null duration", "tools:\n" + tool(base, "retention:"), []string{"tools[0] (a): retention: must not be null"}},
		{"bad URL scheme", "tools:\n" + tool(base, "url: ftp://x/y"), []string{"tools[0] (a): url:", "http or https"}},
		{"URL without host", "tools:\n" + tool(base, "url: http:///y"), []string{"tools[0] (a): url:", "no host"}},
		{"URL unparsable", "tools:\n" + tool(base, "url: \"http://[::1\""), []string{"tools[0] (a): url: invalid URL"}},
		{"entry not a mapping", "tools:\n  - just a string\n", []string{"tools[0]: must be a mapping"}},
		{"tools not a list", "tools: {a: 1}\n", []string{"tools: must be a list"}},
		{"no tools", "other: 1\n", []string{"tools: required"}},
		{"empty", "", []string{"tools: required"}},
		{"not a mapping", "- 1\n", []string{"tools: required"}},
		{"syntax error", "tools: [\n", []string{"invalid YAML"}},
		{"two documents", "tools: []\n---\ntools: []\n", []string{"exactly one document"}},
		{"approval of a read", "tools:\n" + tool(base, "approval: required"), []string{"tools[0] (a): approval: a read_only tool"}},
		{"approval misspelt", "tools:\n" + tool("name: a", "class: irreversible", "approval: yes"), []string{`approval: "yes" is not required or none`}},
		{"approval_ttl alone", "tools:\n" + tool("name: a", "class: irreversible", "approval_ttl: 1h"), []string{"approval_ttl: only with approval: required"}},
		{"approvers alone", "tools:\n" + tool("name: a", "class: irreversible", "approvers: [alice]"), []string{"approvers: only with approval: required"}},
		{"approval_ttl 0", "tools:\n" + tool("name: a", "class: irreversible", "approval: required", "approval_ttl: 0s"), []string{"approval_ttl: must be greater than 0"}},
		{"approval_ttl too long", "tools:\n" + tool("name: a", "class: irreversible", "approval: required", "approval_ttl: 2200h"), []string{"approval_ttl: must be between"}},
		{"bad approver", "tools:\n" + tool("name: a", "class: irreversible", "approval: required", `approvers: ["group:", "al ice"]`), []string{`approvers: [0]: "group:" must be`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", cfg)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestParseApproval: approval: required takes approval_ttl's default, and
// who may approve is an operator or a group of the operators file.
func TestParseApproval(t *testing.T) {
	cfg, err := Parse([]byte("tools:\n" + tool("name: pay", "class: native_key", "approval: required", `approvers: [alice, "group:payments"]`) +
		tool("name: wire", "class: irreversible", "approval: required", "approval_ttl: 15m") + tool("name: mail", "class: irreversible", "approval: none")))
	if err != nil {
		t.Fatal(err)
	}
	pay, wire, mail := cfg.Tools[0], cfg.Tools[1], cfg.Tools[2]
	if !pay.NeedsApproval() || pay.ApprovalWindow() != DefaultApprovalTTL || pay.ApproversText() != "alice, group:payments" ||
		wire.ApprovalWindow() != 15*time.Minute || wire.ApproversText() != "" || mail.NeedsApproval() || mail.ApprovalWindow() != 0 {
		t.Fatalf("specs %+v", cfg.Tools)
	}
	for _, c := range []struct {
		name   string
		groups []string
		spec   Spec
		ok     bool
	}{
		{"alice", nil, pay, true}, {"bob", []string{"payments"}, pay, true}, {"bob", []string{"ops"}, pay, false},
		{"payments", nil, pay, false}, {"anyone", nil, wire, true},
	} {
		if got := c.spec.MayApprove(c.name, c.groups); got != c.ok {
			t.Errorf("%s (groups %v) may approve %s: %v, want %v", c.name, c.groups, c.spec.Name, got, c.ok)
		}
	}
}

// A bad duration must not also produce a misleading ordering error.
func TestParseOneErrorPerMistake(t *testing.T) {
	_, err := Parse([]byte("tools:\n" + tool("name: a", "class: read_only", "timeout: soon", "pending_ttl: 3s")))
	if err == nil {
		t.Fatal("want an error")
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
		t.Errorf("got %d errors, want 1: %v", n, err)
	}
}

func TestParseCollectsAllErrors(t *testing.T) {
	y := "tools:\n" + tool("name: a", "class: magic", "colour: red") + tool("class: probe", "max_in_flight: 0")
	_, err := Parse([]byte(y))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, w := range []string{"tools[0] (a): class:", "tools[0] (a): colour:", "tools[1]: name: required",
		"tools[1]: probe_url: required", "tools[1]: max_in_flight:"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Errorf("errors.As(*FieldError) failed on %v", err)
	}
}

func TestParseDuplicateNameSentinel(t *testing.T) {
	base := "name: a\n    class: read_only"
	_, err := Parse([]byte("tools:\n" + tool(base) + tool(base)))
	if !errors.Is(err, ErrDuplicateTool) {
		t.Errorf("err = %v, want ErrDuplicateTool", err)
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := Parse(make([]byte, MaxConfigBytes+1))
	if !errors.Is(err, ErrConfigTooLarge) {
		t.Errorf("err = %v, want ErrConfigTooLarge", err)
	}
}

func TestParseAlias(t *testing.T) {
	y := "tools:\n  - name: a\n    class: read_only\n    timeout: &t 2s\n  - name: b\n    class: read_only\n    timeout: *t\n"
	cfg, err := Parse([]byte(y))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.Tools[1].Timeout != 2*time.Second {
		t.Errorf("aliased timeout = %v, want 2s", cfg.Tools[1].Timeout)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(good, []byte(fullConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(good); err != nil || len(cfg.Tools) != 5 {
		t.Fatalf("Load(good) = %v, %v", cfg, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("tools: [{name: a}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, filepath.Join(dir, "missing.yaml")} {
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%s) error %v does not mention the path", p, err)
		}
	}
}

func TestValidateGoConfig(t *testing.T) {
	if err := (*Config)(nil).Validate(); !errors.Is(err, ErrNilConfig) {
		t.Errorf("nil config: %v", err)
	}
	cfg := &Config{Tools: []Spec{{Name: "a", Class: ReadOnly}}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "tools[0] (a): timeout: must be greater than 0") {
		t.Errorf("Validate without defaults = %v", err)
	}
}

func TestClassValid(t *testing.T) {
	for _, c := range []Class{NativeKey, Probe, Compensatable, Irreversible, ReadOnly} {
		if !c.Valid() {
			t.Errorf("%s not valid", c)
		}
	}
	for _, c := range []Class{"", "NATIVE_KEY", "other"} {
		if c.Valid() {
			t.Errorf("%q valid", c)
		}
	}
}

func TestStatusString(t *testing.T) {
	want := map[Status]string{Succeeded: "succeeded", Failed: "failed", Unknown: "unknown", NotExecuted: "not_executed", 0: "Status(0)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("Status(%d).String() = %q, want %q", s, s.String(), w)
		}
	}
}

// An anchor holding a huge mapping aliased from every entry must be cheap
// to reject, and the report bounded.
func TestParseAliasAmplification(t *testing.T) {
	var b strings.Builder
	b.WriteString("x: &a {")
	for i := range 50000 {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	b.WriteString("}\ntools: [")
	b.WriteString(strings.Repeat("*a, ", 9999))
	b.WriteString("]\n")
	start := time.Now()
	_, err := Parse([]byte(b.String()))
	if err == nil {
		t.Fatal("want an error")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Parse took %v", d)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n > maxReportedErrors+1 {
		t.Errorf("%d error lines, want at most %d", n, maxReportedErrors+1)
	}
	if !strings.Contains(err.Error(), "tools[0]: has 50000 fields") || !strings.Contains(err.Error(), "more errors") {
		t.Errorf("unexpected report: %.300s", err)
	}
}
