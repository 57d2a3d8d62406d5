package tools

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const gatewayFieldsConfig = `
tools:
  - name: payments.refund
    class: native_key
    url: http://pay.example/refund
    description: Refund a captured payment.
    tenants: [acme, globex]
    input_schema:
      type: object
      required: [amount, currency]
      additionalProperties: false
      properties:
        amount: {type: integer, minimum: 1}
        currency: {type: string, enum: [EUR, USD]}
  - name: search
    class: read_only
`

func TestParseGatewayFields(t *testing.T) {
	cfg, err := Parse([]byte(gatewayFieldsConfig))
	if err != nil {
		t.Fatal(err)
	}
	refund, search := cfg.Tools[0], cfg.Tools[1]
	if refund.Description != "Refund a captured payment." || !reflect.DeepEqual(refund.Tenants, []string{"acme", "globex"}) {
		t.Fatalf("refund: %+v", refund)
	}
	var schema map[string]any
	if err := json.Unmarshal(refund.Schema(), &schema); err != nil || schema["additionalProperties"] != false {
		t.Fatalf("schema %s: %v", refund.Schema(), err)
	}
	if !refund.Allows("acme") || refund.Allows("initech") {
		t.Fatal("the allow-list is not applied")
	}
	if string(search.Schema()) != string(DefaultInputSchema) || !search.Allows("anyone") || search.InputSchema != nil {
		t.Fatalf("search defaults: %+v", search)
	}
}

// The compiled schema reports every failure with its instance location,
// which is what the gateway's 400 names.
func TestCompileInputSchemaReportsPaths(t *testing.T) {
	cfg, err := Parse([]byte(gatewayFieldsConfig))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := CompileInputSchema(cfg.Tools[0].Schema())
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"amount":0,"currency":"GBP"}`))
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a validation error, got %v", err)
	}
	var paths []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error != nil {
			paths = append(paths, u.InstanceLocation)
		}
	}
	if !strings.Contains(strings.Join(paths, " "), "/amount") || !strings.Contains(strings.Join(paths, " "), "/currency") {
		t.Fatalf("paths %q", paths)
	}
	ok, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"amount":5,"currency":"EUR"}`))
	if err := sch.Validate(ok); err != nil {
		t.Fatal(err)
	}
}

func TestParseGatewayFieldErrors(t *testing.T) {
	base := "name: a\n    class: native_key\n    url: http://x/y"
	tests := []struct{ name, yaml, want string }{
		{"schema not a mapping", tool(base, "input_schema: [1]"), "tools[0] (a): input_schema: must be a mapping"},
		{"schema root not object", tool(base, "input_schema: {type: array}"), `input_schema: must have "type": "object" at its root`},
		{"schema invalid", tool(base, "input_schema: {type: object, properties: {n: {type: 7}}}"), "input_schema: is not a valid JSON Schema"},
		{"schema remote ref", tool(base, "input_schema: {type: object, properties: {n: {$ref: 'file:///etc/passwd'}}}"), "input_schema: is not a valid JSON Schema"},
		{"schema non-string keys", tool(base, "input_schema: {type: object, 1: 2}"), "input_schema: is not JSON-like"},
		{"schema reserved arg", tool(base, "input_schema: {type: object, properties: {idempotency_key: {type: string}}}"), "properties.idempotency_key is reserved"},
		{"bad tenant", tool(base, "tenants: [Acme]"), `tools[0] (a): tenants: [0] "Acme" must match`},
		{"tenant twice", tool(base, "tenants: [acme, acme]"), "tenants: [1] acme is listed twice"},
		{"tenants not a list", tool(base, "tenants: acme"), "tenants: must be a list"},
		{"long description", tool(base, "description: "+strings.Repeat("x", 4097)), "description: is 4097 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("tools:\n" + tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// A read-only tool keeps no record and takes no key: the name is free.
	ro := "tools:\n" + tool("name: s", "class: read_only", "input_schema: {type: object, properties: {idempotency_key: {type: string}}}")
	if _, err := Parse([]byte(ro)); err != nil {
		t.Fatalf("read_only with idempotency_key: %v", err)
	}
}
