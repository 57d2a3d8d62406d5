package wire

import (
	"errors"
	"testing"

	"github.com/atmostonce/toolexec/codes"
)

func TestRefusal(t *testing.T) {
	refused := func(code, msg string) *Result {
		return &Result{Status: codes.StatusRejected, Error: &ErrorInfo{Code: code, Message: msg}}
	}
	for _, c := range []struct {
		name string
		res  *Result
		want error
	}{
		{"no record", refused(codes.ReasonInvalidCommand, codes.RefusalNoRecord), ErrNoRecord},
		{"may still land", refused(codes.ReasonInvalidCommand, "the key is started and "+codes.RefusalMayStillLand+
			" for 5000 ms (until its pending_ttl passes); resolve after that, or force it"), ErrMayStillLand},
		{"another refusal", refused(codes.ReasonInvalidCommand, "the call is in flight; compensate after it settles"), nil},
		{"another code", refused(codes.ReasonInvalidField, codes.RefusalNoRecord), nil},
		{"not rejected", &Result{Status: codes.StatusSucceeded}, nil},
		{"nil", nil, nil},
	} {
		if got := c.res.Refusal(); !errors.Is(got, c.want) || (c.want == nil && got != nil) {
			t.Errorf("%s: Refusal() = %v, want %v", c.name, got, c.want)
		}
	}
}
