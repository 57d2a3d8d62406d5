package cli

import (
	"encoding/json"
	"io"
)

// PrintJSON writes v to w as indented JSON: what the commands print is
// read by people first and by scripts (jq) second.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
