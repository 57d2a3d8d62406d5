package tools

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnknownTool reports a tool name that nothing is configured for.
	ErrUnknownTool = errors.New("tools: unknown tool")
	// ErrDuplicateTool reports a second tool with a name already in use.
	ErrDuplicateTool = errors.New("tools: duplicate tool")
	// ErrNilTool reports a nil Tool handed to Register or FromConfig.
	ErrNilTool = errors.New("tools: nil tool")
	// ErrMissingURL reports a spec with neither a URL nor an in-process tool.
	ErrMissingURL = errors.New("tools: url required")
	// ErrConfigTooLarge reports a config over MaxConfigBytes.
	ErrConfigTooLarge = errors.New("tools: config too large")
	// ErrNilConfig reports a nil *Config.
	ErrNilConfig = errors.New("tools: nil config")
)

// FieldError is one problem with one field of the configuration. Its text
// names the field path, e.g.
//
//	tools[1] (payments.refund): pending_ttl: must be greater than timeout (5s)
//
// Parse and Validate return all FieldErrors joined with errors.Join; use
// errors.As to get at one.
type FieldError struct {
	Index int    // position in the tools list; -1 when not from a file
	Tool  string // the tool's name when known
	Field string // the YAML field name, e.g. "pending_ttl"; "" for the whole entry
	Msg   string
	Line  int   // line in the YAML source, 0 when unknown
	Err   error // optional sentinel, returned by Unwrap
}

func (e *FieldError) Error() string {
	parts := make([]string, 0, 3)
	if w := e.where(); w != "" {
		parts = append(parts, w)
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	msg := e.Msg
	if e.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", e.Line)
	}
	return strings.Join(append(parts, msg), ": ")
}

// Unwrap returns the sentinel behind the error, if any.
func (e *FieldError) Unwrap() error { return e.Err }

func (e *FieldError) where() string {
	name := displayName(e.Tool)
	switch {
	case e.Index >= 0 && name != "":
		return fmt.Sprintf("tools[%d] (%s)", e.Index, name)
	case e.Index >= 0:
		return fmt.Sprintf("tools[%d]", e.Index)
	case name != "":
		return "tool " + name
	}
	return ""
}

// displayName shows a valid name as is and quotes anything else, bounded,
// so that a hostile config cannot put control characters into logs.
func displayName(name string) string {
	if name == "" || validName(name) {
		return name
	}
	return quoteBounded(name)
}

// quoteBounded quotes s for an error message, cut to 64 bytes.
func quoteBounded(s string) string {
	return fmt.Sprintf("%q", bound(s, 64))
}
