package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// probeAnswer is the body of a probe's 200 answer.
type probeAnswer struct {
	Status string          `json:"status"`
	Result any             `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// Probe asks the tool's status endpoint what became of the call made with
// downstreamKey: GET probe_url?key=<key> (with & when probe_url already has
// a query), one attempt, timeout spec.Timeout. It is safe for concurrent
// use and blocks until the answer or the timeout.
//
//   - 200 {"status":"succeeded","result":...}: Succeeded with Result.
//   - 200 {"status":"failed","error":...}: Failed, Code "probe_failed",
//     Message the JSON of error.
//   - 404: NotExecuted, Code "probe_not_found": the tool never saw the key.
//   - anything else: Unknown, with a Code that says why. An empty or
//     non-printable key is Unknown "bad_request" with no request made.
func (h *HTTP) Probe(ctx context.Context, downstreamKey string) Outcome {
	// Why refuse a bad key: the probe would answer 404 for it, which reads
	// as NotExecuted and would allow running the call again.
	if err := checkDownstreamKey(downstreamKey); err != nil {
		return outcome(Unknown, CodeBadRequest, err.Error())
	}
	target, err := probeTarget(h.spec.ProbeURL, downstreamKey)
	if err != nil {
		return outcome(Unknown, CodeNoProbeURL, err.Error()) // Attempts 0: nothing asked
	}
	out := h.cred.scrub(h.probeOnce(ctx, target))
	out.Attempts = 1
	return out
}

// probeTarget appends key=<escaped key> to the probe URL's query.
func probeTarget(probeURL, key string) (string, error) {
	if probeURL == "" {
		return "", errors.New("tools: spec has no probe_url")
	}
	u, err := url.Parse(probeURL)
	if err != nil {
		return "", fmt.Errorf("tools: probe_url: %w", err)
	}
	q := "key=" + url.QueryEscape(key)
	if u.RawQuery != "" {
		q = u.RawQuery + "&" + q
	}
	u.RawQuery = q
	return u.String(), nil
}

func (h *HTTP) probeOnce(ctx context.Context, target string) Outcome {
	actx, cancel := context.WithTimeout(ctx, h.spec.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodGet, target, nil)
	if err != nil {
		return outcome(Unknown, CodeBadRequest, err.Error())
	}
	h.cred.apply(hreq.Header)
	hreq.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(hreq)
	if err != nil {
		return outcome(Unknown, probeErrorCode(ctx, err), err.Error())
	}
	defer resp.Body.Close()
	return probeResponse(resp)
}

func probeErrorCode(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return CodeCancelled
	}
	return probeCode(err)
}

func probeResponse(resp *http.Response) Outcome {
	switch resp.StatusCode {
	case http.StatusNotFound:
		return outcome(NotExecuted, CodeProbeNotFound, "the probe has no record of the key")
	case http.StatusOK:
		return probeBody(resp)
	}
	return statusOutcome(Unknown, resp)
}

func probeBody(resp *http.Response) Outcome {
	data, err := readBounded(resp.Body, maxResponseBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return outcome(Unknown, CodeResponseTooLarge, err.Error())
	case err != nil:
		return outcome(Unknown, sentCode(err), err.Error())
	}
	var a probeAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return outcome(Unknown, CodeBadResponse, "probe answer is not a JSON object: "+err.Error())
	}
	return a.outcome()
}

func (a probeAnswer) outcome() Outcome {
	switch a.Status {
	case "succeeded":
		return Outcome{Status: Succeeded, Result: a.Result}
	case "failed":
		return outcome(Failed, CodeProbeFailed, compactJSON(a.Error))
	}
	return outcome(Unknown, CodeProbeStatus, "probe status "+quoteBounded(a.Status))
}

// compactJSON returns raw without insignificant space.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
