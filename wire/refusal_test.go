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
	coded := func(refusal, msg string) *Result {
		return &Result{Status: codes.StatusRejected, Error: &ErrorInfo{Code: codes.ReasonInvalidCommand, Message: msg, Refusal: refusal}}
	}
	for _, c := range []struct {
		name string
		res  *Result
		want error
	}{
		// The code decides, whatever the message says.
		{"no record by code", coded(codes.RefusalNoRecord, "reworded"), ErrNoRecord},
		{"may still land by code", coded(codes.RefusalMayStillLand, ""), ErrMayStillLand},
		{"code over text", coded(codes.RefusalMayStillLand, codes.RefusalNoRecordText), ErrMayStillLand},
		{"an unknown code", coded("a_later_kind", codes.RefusalNoRecordText), nil},
		// An answer written without the code is read by its text.
		{"no record by text", refused(codes.ReasonInvalidCommand, codes.RefusalNoRecordText), ErrNoRecord},
		{"may still land by text", refused(codes.ReasonInvalidCommand, "the key is started and "+codes.RefusalMayStillLandText+
			" for 5000 ms (until its pending_ttl passes); resolve after that, or force it"), ErrMayStillLand},
		{"another refusal", refused(codes.ReasonInvalidCommand, "the call is in flight; compensate after it settles"), nil},
		{"another code", refused(codes.ReasonInvalidField, codes.RefusalNoRecordText), nil},
		{"another code with a refusal", &Result{Status: codes.StatusRejected,
			Error: &ErrorInfo{Code: codes.ReasonInvalidField, Refusal: codes.RefusalNoRecord}}, nil},
		{"not rejected", &Result{Status: codes.StatusSucceeded}, nil},
		{"nil", nil, nil},
	} {
		if got := c.res.Refusal(); !errors.Is(got, c.want) || (c.want == nil && got != nil) {
			t.Errorf("%s: Refusal() = %v, want %v", c.name, got, c.want)
		}
	}
}
