package tools

import (
	"context"
	"strings"
	"testing"
)

func TestFuncPanicIsUnknown(t *testing.T) {
	tests := []struct {
		name string
		f    Func
	}{
		{"value", func(context.Context, Request) Outcome { panic("boom") }},
		{"error", func(context.Context, Request) Outcome { var m map[string]int; m["x"] = 1; return Outcome{} }},
		{"huge", func(context.Context, Request) Outcome { panic(strings.Repeat("é", 5000)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.f.Invoke(context.Background(), testRequest())
			checkOutcome(t, out, Unknown, CodePanic, 1)
			if !strings.HasPrefix(out.Message, "panic: ") || len(out.Message) > MaxMessageBytes {
				t.Errorf("Message = %.40q (%d bytes)", out.Message, len(out.Message))
			}
		})
	}
}

func TestFuncPassesThrough(t *testing.T) {
	want := Outcome{Status: Succeeded, Result: "ok", Attempts: 1}
	f := Func(func(_ context.Context, req Request) Outcome {
		if req.Key != "intent-1" {
			t.Errorf("Key = %q", req.Key)
		}
		return want
	})
	if got := f.Invoke(context.Background(), testRequest()); got != want {
		t.Errorf("Invoke = %+v, want %+v", got, want)
	}
}

func TestBound(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"},
		{"h\xffi", 10, "h\uFFFDi"},
	}
	for _, tc := range tests {
		if got := bound(tc.in, tc.n); got != tc.want {
			t.Errorf("bound(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
