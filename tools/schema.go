package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/atmostonce/toolexec/wire"
)

// DefaultInputSchema is the input schema of a tool that declares none:
// any JSON object.
var DefaultInputSchema = json.RawMessage(`{"type":"object"}`)

// ReservedArg is the argument the gateway's MCP tools/list adds to every
// tool that is not read-only (the idempotency key, chosen by the caller
// and sent again on every retry). A tool's own schema may not define it.
const ReservedArg = "idempotency_key"

// maxSchemaBytes bounds an input schema as JSON. Why: the schema is sent
// to every MCP host on tools/list (and from there into a model's context),
// and compiling it is work done at every start.
const maxSchemaBytes = 64 << 10

// schemaURL names the schema while it is compiled. Why a reserved TLD: the
// compiler has no loaders (UseLoader with an empty SchemeURLLoader), so a
// $ref to anything but the schema itself fails instead of reading a file
// or the network; the name only anchors "#/$defs/..." references.
const schemaURL = "https://toolexec.invalid/input-schema.json"

// CompileInputSchema compiles raw (JSON) as a JSON Schema, draft 2020-12
// unless its $schema names another draft. References outside the schema
// are refused; "pattern" uses Go's RE2 syntax (linear time, no
// backreferences or lookaround). The result is safe for concurrent use.
func CompileInputSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// schemaField decodes a YAML mapping into JSON bytes.
func schemaField(n *yaml.Node, dst *json.RawMessage) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("must be a mapping (a JSON Schema object)")
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("cannot decode: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("is not JSON-like (every key a string, no NaN or infinity): %w", err)
	}
	if len(b) > maxSchemaBytes {
		return fmt.Errorf("is %d bytes as JSON, at most %d allowed", len(b), maxSchemaBytes)
	}
	*dst = b
	return nil
}

// checkGatewayFields checks what only the gateway uses: description,
// input_schema and tenants.
func checkGatewayFields(c *checker, s Spec) {
	if c.ok("description") && len(s.Description) > maxDescriptionBytes {
		c.fail("description", nil, "is %d bytes, at most %d allowed", len(s.Description), maxDescriptionBytes)
	}
	checkSchema(c, s)
	checkTenants(c, s)
}

func checkSchema(c *checker, s Spec) {
	if len(s.InputSchema) == 0 || !c.ok("input_schema") {
		return
	}
	if len(s.InputSchema) > maxSchemaBytes {
		c.fail("input_schema", nil, "is %d bytes as JSON, at most %d allowed", len(s.InputSchema), maxSchemaBytes)
		return
	}
	var root map[string]any
	if err := json.Unmarshal(s.InputSchema, &root); err != nil {
		c.fail("input_schema", nil, "must be a JSON object: %v", err)
		return
	}
	if root["type"] != "object" {
		c.fail("input_schema", nil, `must have "type": "object" at its root (arguments are a JSON object)`)
		return
	}
	if props, _ := root["properties"].(map[string]any); props != nil && !s.Class.ReadOnly() && c.ok("class") {
		if _, clash := props[ReservedArg]; clash {
			c.fail("input_schema", nil, "properties.%s is reserved: the gateway's MCP tools/list adds it to every tool that is not read_only", ReservedArg)
			return
		}
	}
	if _, err := CompileInputSchema(s.InputSchema); err != nil {
		c.fail("input_schema", nil, "is not a valid JSON Schema: %v", err)
	}
}

func checkTenants(c *checker, s Spec) {
	if !c.ok("tenants") {
		return
	}
	seen := map[string]bool{}
	for i, t := range s.Tenants {
		switch {
		case !wire.ValidTenant(t):
			c.fail("tenants", nil, "[%d] %s must match [a-z0-9_-]{1,64}", i, quoteBounded(t))
			return
		case seen[t]:
			c.fail("tenants", nil, "[%d] %s is listed twice", i, t)
			return
		}
		seen[t] = true
	}
}
