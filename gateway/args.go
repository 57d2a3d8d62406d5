package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/atmostonce/toolexec/wire"
)

// maxBodyBytes bounds a request body: the wire's whole-message limit
// (wire.MaxMessageBytes). A tool's own max_args_bytes is checked by the
// executor on the canonical arguments (a 400 "oversized").
const maxBodyBytes = 1 << 20

// maxSchemaErrors bounds the failures listed in one 400.
const maxSchemaErrors = 20

var (
	errNotObject   = errors.New("the body must be one JSON object (the arguments)")
	errBodyTooLong = fmt.Errorf("the body is larger than %d bytes", maxBodyBytes)
)

// decodeArgs reads the JSON object of the arguments; an empty body is {}.
// Numbers stay json.Number so the schema sees them exactly.
func decodeArgs(r io.Reader) (map[string]any, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxBodyBytes {
		return nil, errBodyTooLong
	}
	return parseArgs(body)
}

// parseArgs reads the arguments' JSON object. A text that encoding/json
// would read as something else than it says (not UTF-8, a lone
// surrogate, a member named twice) is refused (checkJSONText).
func parseArgs(body []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	if err := checkJSONText(body); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotObject
	}
	return args, nil
}

// schemaError is one failure of the arguments against the input schema.
type schemaError struct {
	Path    string `json:"path"`    // JSON Pointer into the arguments, "" for the whole object
	Message string `json:"message"` // what is wrong there
}

// validate checks args against the tool's schema and lists the failures,
// each with its path.
func (t *tool) validate(args map[string]any) []schemaError {
	err := t.schema.Validate(any(args))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []schemaError{{Path: "", Message: err.Error()}}
	}
	var out []schemaError
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil || len(out) >= maxSchemaErrors {
			continue
		}
		out = append(out, schemaError{Path: u.InstanceLocation, Message: u.Error.String()})
	}
	if len(out) == 0 {
		out = append(out, schemaError{Path: "", Message: ve.Error()})
	}
	return out
}

// wireArgs turns every json.Number into the value the wire carries
// (wire.ParseNumber: an integer exactly, or the float that names the
// number), or refuses a number that has none. It runs before the schema
// sees the arguments, so that the schema checks the value the tool
// receives, and a number's cost is bounded before anything computes with
// it (a schema validator's arbitrary precision costs with the exponent).
// 120 and 120.0 are one number, as on the wire.
func wireArgs(args map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(args))
	for k, v := range args {
		w, err := wireValue(v)
		if err != nil {
			return nil, fmt.Errorf("/%s%w", k, err)
		}
		out[k] = w
	}
	return out, nil
}

func wireValue(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		n, err := wire.ParseNumber(string(x))
		if err != nil {
			return nil, fmt.Errorf(": %w", err)
		}
		return n, nil
	case map[string]any:
		return wireArgs(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			w, err := wireValue(e)
			if err != nil {
				return nil, fmt.Errorf("/%d%w", i, err)
			}
			out[i] = w
		}
		return out, nil
	}
	return v, nil
}
