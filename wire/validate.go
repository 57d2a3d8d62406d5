package wire

import (
	"unicode/utf8"

	"github.com/atmostonce/toolexec/codes"
)

// The checks of a decoded intent: what contract v1 accepts from each
// topic, its identity and bounds, and its Kafka key.

// Source says which topic an intent came from; it decides which types are
// acceptable.
type Source uint8

const (
	FromIntents Source = iota + 1
	FromControl
)

func validateIntent(in *Intent, src Source) *Reject {
	if rej := validateHeader(in, src); rej != nil {
		return rej
	}
	if rej := validateIdentity(in); rej != nil {
		return rej
	}
	if rej := checkCopiedFields(in); rej != nil {
		return rej
	}
	switch in.Type {
	case TypeCall, TypeLookup:
		return validateCall(in)
	case TypeResolve:
		return validateResolve(in)
	case TypeApprove, TypeDeny:
		return validateDecision(in)
	}
	return nil
}

func validateHeader(in *Intent, src Source) *Reject {
	switch {
	case in.V == 0:
		return reject(codes.ReasonMissingField, "field v is required (1)")
	case in.V != Version:
		return reject(codes.ReasonUnsupportedVersion, "v=%d is not supported, this executor reads v=%d", in.V, Version)
	case in.Type == "":
		return reject(codes.ReasonMissingField, "field type is required")
	case Operator(in.Type) && src == FromIntents:
		return reject(codes.ReasonResolveOnIntents, "%s is accepted only on the control topic", in.Type)
	case in.Force && src == FromIntents:
		return reject(codes.ReasonResolveOnIntents, "force is accepted only on the control topic")
	case in.Type != TypeCall && in.Type != TypeCompensate && in.Type != TypeLookup && !Operator(in.Type):
		return reject(codes.ReasonInvalidField, "field type %q is not call, compensate, resolve, lookup, approve or deny", clip(in.Type))
	}
	return nil
}

func validateIdentity(in *Intent) *Reject {
	if in.Tenant == "" {
		in.Tenant = DefaultTenant
	}
	switch {
	case in.ID == "":
		return reject(codes.ReasonMissingField, "field id is required")
	case len(in.ID) > MaxIDBytes || !utf8.ValidString(in.ID):
		return reject(codes.ReasonInvalidField, "field id must be valid UTF-8 of at most %d bytes", MaxIDBytes)
	case !ValidTenant(in.Tenant):
		return reject(codes.ReasonInvalidField, "field tenant %q must match [a-z0-9_-]{1,64}", clip(in.Tenant))
	case in.Key == "":
		return reject(codes.ReasonMissingField, "field key is required")
	case len(in.Key) > MaxKeyBytes:
		return reject(codes.ReasonOversized, "field key is %d bytes, the limit is %d", len(in.Key), MaxKeyBytes)
	case CheckKey(in.Key) != nil:
		return reject(codes.ReasonInvalidField, "field key: %v", CheckKey(in.Key))
	case len(in.ReplyTo) > MaxReplyToBytes:
		return reject(codes.ReasonBadReplyTo, "field reply_to is longer than %d bytes", MaxReplyToBytes)
	case len(in.CallID) > MaxIDBytes:
		return reject(codes.ReasonInvalidField, "field call_id is longer than %d bytes", MaxIDBytes)
	case len(in.DownstreamKey) > MaxIDBytes:
		return reject(codes.ReasonInvalidField, "field downstream_key is longer than %d bytes", MaxIDBytes)
	case in.DownstreamKey != "" && (in.Type != TypeResolve || in.CallID == ""):
		return reject(codes.ReasonInvalidField, "field downstream_key is accepted only on a resolve that names its call (call_id)")
	}
	return nil
}

func validateCall(in *Intent) *Reject {
	switch {
	case in.Tool == "":
		return reject(codes.ReasonMissingField, "field tool is required for a %s", in.Type)
	case len(in.Tool) > MaxToolBytes:
		return reject(codes.ReasonInvalidField, "field tool is longer than %d bytes", MaxToolBytes)
	}
	return nil
}

func validateResolve(in *Intent) *Reject {
	switch in.Outcome {
	case "":
		return reject(codes.ReasonMissingField, "field outcome is required for a resolve")
	case codes.StatusSucceeded, codes.StatusFailed, codes.StatusNotExecuted, codes.StatusCompensated, codes.StatusCompensationFailed:
		return nil
	}
	return reject(codes.ReasonInvalidField, "field outcome %q is not succeeded, failed, not_executed, compensated or compensation_failed", clip(in.Outcome))
}

// validateDecision checks an approve or deny: a person decides, and says
// why (both are recorded in the event log).
func validateDecision(in *Intent) *Reject {
	switch {
	case in.By == "":
		return reject(codes.ReasonMissingField, "field by (who decides) is required for %s", in.Type)
	case in.Reason == "":
		return reject(codes.ReasonMissingField, "field reason is required for %s", in.Type)
	case in.ArgsDigest != "" && !validDigest(in.ArgsDigest):
		return reject(codes.ReasonInvalidField, "field args_digest must be 64 lower-case hex digits (the SHA-256 of the canonical arguments)")
	}
	return nil
}

// validDigest reports whether s is a SHA-256 in lower-case hex.
func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// checkRecordKey enforces that the Kafka key names the same tenant and key
// as the body: routing trusts the Kafka key, the decision trusts the body,
// and a mismatch would let a tenant read another tenant's stored answer.
func checkRecordKey(in *Intent, recordKey []byte) *Reject {
	if recordKey == nil {
		return reject(codes.ReasonMissingField, "the record has no Kafka key; it must be %q", in.RoutingKey())
	}
	tenant, key, ok := SplitRoutingKey(string(recordKey))
	switch {
	case !ok:
		return reject(codes.ReasonKeyMismatch, "the Kafka key %q is not <tenant>/<key>", clip(string(recordKey)))
	case tenant != in.Tenant:
		return reject(codes.ReasonWrongTenant, "the Kafka key names tenant %q but the intent says %q", clip(tenant), clip(in.Tenant))
	case key != in.Key:
		return reject(codes.ReasonKeyMismatch, "the Kafka key names key %q but the intent says %q", clip(key), clip(in.Key))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
