package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/atmostonce/toolexec/wire"
)

// A read-only tool keeps no record, so there is no key to GET.
func (g *Gateway) writeAccepted(w http.ResponseWriter, t *tool, res *wire.Result, retry int) {
	if t.requiresKey() {
		w.Header().Set("Location", callPath(t.name(), res.Key))
	}
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	writeAnswer(w, http.StatusAccepted, res)
}

// callPath is the GET path of a key.
func callPath(tool, key string) string {
	return "/v1/tools/" + url.PathEscape(tool) + "/calls/" + url.PathEscape(key)
}

func writeAnswer(w http.ResponseWriter, status int, res *wire.Result) {
	w.Header().Set("Idempotent-Replayed", strconv.FormatBool(res.WasReplay))
	writeJSON(w, status, answerJSON(res))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshalJSON(v)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, codeInternal, "the answer cannot be written as JSON: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// marshalJSON is json.Marshal without HTML escaping, and with a final
// newline: bodies are read by programs and by people at a terminal (curl),
// not embedded in pages, and "<token>" reads better than
// "\u003ctoken\u003e".
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
