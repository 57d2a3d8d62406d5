package tools

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/atmostonce/toolexec/wire"
)

// checker collects the validation errors of one spec. Fields that already
// failed (while decoding, or an earlier check) are marked bad, and checks
// that depend on a bad field are skipped, so one mistake gives one error.
// Not safe for concurrent use.
type checker struct {
	index int // -1 outside a config file
	name  string
	bad   map[string]bool
	errs  []error
}

func newChecker(index int, name string, bad map[string]bool) *checker {
	c := &checker{index: index, name: name, bad: map[string]bool{}}
	for f := range bad {
		c.bad[f] = true
	}
	return c
}

// fail records an error for field and marks the field bad.
func (c *checker) fail(field string, sentinel error, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{
		Index: c.index, Tool: c.name, Field: field,
		Msg: fmt.Sprintf(format, args...), Err: sentinel,
	})
	c.bad[field] = true
}

// ok reports whether none of fields is bad.
func (c *checker) ok(fields ...string) bool {
	for _, f := range fields {
		if c.bad[f] {
			return false
		}
	}
	return true
}

// checkSpec runs every check that needs only the spec itself.
func checkSpec(c *checker, s Spec) {
	checkName(c, s)
	checkClass(c, s)
	checkURLField(c, "url", s.URL)
	checkDurations(c, s)
	checkProbe(c, s)
	checkCompensate(c, s)
	checkLimits(c, s)
	checkCredentials(c, s)
	checkGatewayFields(c, s)
	checkApproval(c, s)
}

// checkApproval checks approval, approval_ttl and approvers.
func checkApproval(c *checker, s Spec) {
	switch {
	case !c.ok("approval"):
		return
	case s.Approval != ApprovalNone && s.Approval != ApprovalRequired && s.Approval != "none":
		c.fail("approval", nil, "%s is not required or none", quoteBounded(string(s.Approval)))
		return
	case s.NeedsApproval() && c.ok("class") && s.Class.ReadOnly():
		c.fail("approval", nil, "a read_only tool keeps no record for a call to wait on; it cannot require approval")
	}
	if !s.NeedsApproval() {
		if s.ApprovalTTL != 0 && c.ok("approval_ttl") {
			c.fail("approval_ttl", nil, "only with approval: required")
		}
		if s.Approvers != nil && c.ok("approvers") {
			c.fail("approvers", nil, "only with approval: required")
		}
		return
	}
	if c.ok("approval_ttl") && (s.ApprovalTTL < 0 || s.ApprovalTTL > maxApprovalTTL) {
		c.fail("approval_ttl", nil, "must be between 0 (the default, %s) and %s", DefaultApprovalTTL, maxApprovalTTL)
	}
	checkApprovers(c, s)
}

func checkApprovers(c *checker, s Spec) {
	if !c.ok("approvers") {
		return
	}
	for i, a := range s.Approvers {
		if !validApprover(strings.TrimPrefix(a, ApproverGroupPrefix)) {
			c.fail("approvers", nil, "[%d]: %s must be an operator name or %s<group>, each [A-Za-z0-9._@-]{1,64}", i, quoteBounded(a), ApproverGroupPrefix)
			return
		}
	}
	if n := len(s.ApproversText()); n > wire.MaxApproversBytes {
		c.fail("approvers", nil, "are %d bytes joined, at most %d", n, wire.MaxApproversBytes)
	}
}

// validApprover is the console's operator (and group) name grammar.
func validApprover(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

func checkName(c *checker, s Spec) {
	switch {
	case !c.ok("name"):
	case s.Name == "":
		c.fail("name", nil, "required")
	case !validName(s.Name):
		c.fail("name", nil, "%s must match [a-z0-9._-]{1,128}", quoteBounded(s.Name))
	}
}

func checkClass(c *checker, s Spec) {
	switch {
	case !c.ok("class"):
	case s.Class == "":
		c.fail("class", nil, "required (one of %s)", classNames)
	case !s.Class.Valid():
		c.fail("class", nil, "unknown class %s (want one of %s)", quoteBounded(string(s.Class)), classNames)
	}
}

// checkURLField checks an optional http(s) URL.
func checkURLField(c *checker, field, raw string) {
	if raw == "" || !c.ok(field) {
		return
	}
	if err := checkHTTPURL(raw); err != nil {
		c.fail(field, nil, "%v", err)
	}
}

func checkHTTPURL(raw string) error {
	if len(raw) > maxURLBytes {
		return fmt.Errorf("longer than %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL %s", quoteBounded(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s must be an http or https URL", quoteBounded(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("%s has no host", quoteBounded(raw))
	}
	return nil
}

func checkDurations(c *checker, s Spec) {
	if c.ok("timeout") && s.Timeout <= 0 {
		c.fail("timeout", nil, "must be greater than 0")
	}
	if c.ok("timeout", "pending_ttl") && s.PendingTTL <= s.Timeout {
		c.fail("pending_ttl", nil, "must be greater than timeout (%s)", s.Timeout)
	}
	if c.ok("pending_ttl", "retention") && s.Retention < s.PendingTTL {
		c.fail("retention", nil, "must be at least pending_ttl (%s)", s.PendingTTL)
	}
}

func checkProbe(c *checker, s Spec) {
	switch {
	case !c.ok("class", "probe_url"):
	case s.Class.NeedsProbeURL() && s.ProbeURL == "":
		c.fail("probe_url", nil, "required for class probe")
	case !s.Class.NeedsProbeURL() && s.ProbeURL != "":
		c.fail("probe_url", nil, "only allowed for class probe (class is %s)", s.Class)
	default:
		checkURLField(c, "probe_url", s.ProbeURL)
	}
	if s.ProbeFence && !s.Class.NeedsProbeURL() {
		c.fail("probe_fence", nil, "only allowed for class probe (class is %s)", s.Class)
	}
}

// checkCompensate checks compensate_with without knowing the other tools;
// checkCompensateTarget does the rest within a config.
func checkCompensate(c *checker, s Spec) {
	switch {
	case !c.ok("class", "compensate_with"):
	case s.Class.NeedsCompensateWith() && s.CompensateWith == "":
		c.fail("compensate_with", nil, "required for class compensatable")
	case !s.Class.NeedsCompensateWith() && s.CompensateWith != "":
		c.fail("compensate_with", nil, "only allowed for class compensatable (class is %s)", s.Class)
	case s.CompensateWith != "" && s.CompensateWith == s.Name:
		c.fail("compensate_with", nil, "must name another tool, not the tool itself")
	}
}

func checkLimits(c *checker, s Spec) {
	checkRange(c, "max_in_flight", s.MaxInFlight, 1, maxInFlightLimit)
	checkRange(c, "retries", s.Retries, 0, maxRetriesLimit)
	checkRange(c, "max_args_bytes", s.MaxArgsBytes, 1, wire.MaxArgsLimit) // a record must fit one snapshot event
}

func checkRange(c *checker, field string, v, lo, hi int) {
	if c.ok(field) && (v < lo || v > hi) {
		c.fail(field, nil, "must be between %d and %d, got %d", lo, hi, v)
	}
}

// checkCompensateTarget checks that compensate_with names a tool of the
// config; names maps each name to its first index.
func checkCompensateTarget(c *checker, s Spec, names map[string]int) {
	if s.CompensateWith == "" || !c.ok("class", "compensate_with") {
		return
	}
	if _, ok := names[s.CompensateWith]; !ok {
		c.fail("compensate_with", ErrUnknownTool, "names %s, which is not a tool in this config", quoteBounded(s.CompensateWith))
	}
}

// checkDuplicate reports a name already used by an earlier entry.
func checkDuplicate(c *checker, s Spec, index int, names map[string]int) {
	if first, ok := names[s.Name]; ok && first != index && s.Name != "" && c.ok("name") {
		c.fail("name", ErrDuplicateTool, "duplicate of tools[%d]", first)
	}
}
