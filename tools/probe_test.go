package tools

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    Status
		code    string
		result  any
		message string
	}{
		{"succeeded", 200, `{"status":"succeeded","result":{"id":"r1"}}`, Succeeded, "", map[string]any{"id": "r1"}, ""},
		{"failed", 200, `{"status":"failed","error":{ "code": "card_declined" }}`, Failed, CodeProbeFailed, nil, `{"code":"card_declined"}`},
		{"not found", 404, `no such key`, NotExecuted, CodeProbeNotFound, nil, ""},
		{"pending", 200, `{"status":"pending"}`, Unknown, CodeProbeStatus, nil, `"pending"`},
		{"bad json", 200, `{"status":`, Unknown, CodeBadResponse, nil, ""},
		{"not an object", 200, `["succeeded"]`, Unknown, CodeBadResponse, nil, ""},
		{"server error", 500, `oops`, Unknown, "http_500", nil, "oops"},
		{"other status", 202, `{"status":"succeeded"}`, Unknown, "http_202", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newToolServer(t, answer(tc.status, tc.body))
			h, _ := newTestHTTP(testSpec(Probe, ts.URL), nil)
			out := h.Probe(context.Background(), "tk1_abc")
			checkOutcome(t, out, tc.want, tc.code, 1)
			if !reflect.DeepEqual(out.Result, tc.result) {
				t.Errorf("Result = %#v, want %#v", out.Result, tc.result)
			}
			if !strings.Contains(out.Message, tc.message) {
				t.Errorf("Message = %q, want it to contain %q", out.Message, tc.message)
			}
		})
	}
}

func TestProbeRequest(t *testing.T) {
	var got *http.Request
	ts := newToolServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		got = r
		answer(404, "")(n, w, r)
	})
	tests := []struct{ probeURL, wantQuery string }{
		{ts.URL + "/status", "key=tk1_a%2Bb+c%26d"},
		{ts.URL + "/status?v=2", "v=2&key=tk1_a%2Bb+c%26d"},
	}
	for _, tc := range tests {
		spec := testSpec(Probe, ts.URL)
		spec.ProbeURL = tc.probeURL
		h, _ := newTestHTTP(spec, nil)
		h.Probe(context.Background(), "tk1_a+b c&d")
		if got.Method != http.MethodGet || got.URL.Path != "/status" || got.URL.RawQuery != tc.wantQuery {
			t.Errorf("probe request = %s %s?%s, want GET /status?%s", got.Method, got.URL.Path, got.URL.RawQuery, tc.wantQuery)
		}
		if k := got.URL.Query().Get("key"); k != "tk1_a+b c&d" {
			t.Errorf("key decodes to %q", k)
		}
	}
}

func TestProbeNetworkErrors(t *testing.T) {
	h, _ := newTestHTTP(testSpec(Probe, refusedURL(t)), nil)
	checkOutcome(t, h.Probe(context.Background(), "k"), Unknown, CodeConnectionRefused, 1)

	ts := newToolServer(t, hangUntilGone)
	spec := testSpec(Probe, ts.URL)
	spec.Timeout = 50 * time.Millisecond
	h, _ = newTestHTTP(spec, nil)
	checkOutcome(t, h.Probe(context.Background(), "k"), Unknown, CodeTimeout, 1)

	checkOutcome(t, h.Probe(context.Background(), ""), Unknown, CodeBadRequest, 0)

	spec.ProbeURL = ""
	h, _ = newTestHTTP(spec, nil)
	checkOutcome(t, h.Probe(context.Background(), "k"), Unknown, CodeNoProbeURL, 0)
}
