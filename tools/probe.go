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
// a query), and &fence=1 when the tool fences (spec.ProbeFence), one
// attempt, timeout spec.Timeout. It is safe for concurrent use and blocks
// until the answer or the timeout.
//
//   - 200 {"status":"succeeded","result":...}: Succeeded with Result.
//   - 200 {"status":"failed","error":...}: Failed, Code "probe_failed",
//     Message the JSON of error.
//   - 200 {"status":"fenced"}, from a fencing tool: NotExecuted, Code
//     "probe_fenced": the tool never saw the key and refuses it from now
//     on, so the call can never act.
//   - 404 from a tool that does not fence: NotExecuted, Code
//     "probe_not_found": the tool has not seen the key yet (a request
//     delayed past the probe may still reach it: the residual risk).
//   - 404 from a fencing tool: Unknown, "probe_unfenced": without the
//     fence its "no record" is no proof, so it is asked again later.
//   - anything else: Unknown, with a Code that says why. An empty or
//     non-printable key is Unknown "bad_request" with no request made.
func (h *HTTP) Probe(ctx context.Context, downstreamKey string) Outcome {
	// Why refuse a bad key: the probe would answer 404 for it, which reads
	// as NotExecuted and would allow running the call again.
	if err := checkDownstreamKey(downstreamKey); err != nil {
		return outcome(Unknown, CodeBadRequest, err.Error())
	}
	target, err := probeTarget(h.spec.ProbeURL, downstreamKey, h.spec.ProbeFence)
	if err != nil {
		return outcome(Unknown, CodeNoProbeURL, err.Error()) // Attempts 0: nothing asked
	}
	out := h.cred.scrub(h.probeOnce(ctx, target, h.spec.ProbeFence))
	out.Attempts = 1
	return out
}

// probeTarget appends key=<escaped key>, and fence=1 for a fencing tool,
// to the probe URL's query.
func probeTarget(probeURL, key string, fence bool) (string, error) {
	if probeURL == "" {
		return "", errors.New("tools: spec has no probe_url")
	}
	u, err := url.Parse(probeURL)
	if err != nil {
		return "", fmt.Errorf("tools: probe_url: %w", err)
	}
	q := "key=" + url.QueryEscape(key)
	if fence {
		q += "&fence=1"
	}
	if u.RawQuery != "" {
		q = u.RawQuery + "&" + q
	}
	u.RawQuery = q
	return u.String(), nil
}

func (h *HTTP) probeOnce(ctx context.Context, target string, fence bool) Outcome {
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
	return probeResponse(resp, fence)
}

func probeErrorCode(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return CodeCancelled
	}
	return probeCode(err)
}

func probeResponse(resp *http.Response, fence bool) Outcome {
	switch {
	case resp.StatusCode == http.StatusNotFound && fence:
		return outcome(Unknown, CodeProbeUnfenced, "the probe has no record of the key but did not fence it; a request may still reach the tool")
	case resp.StatusCode == http.StatusNotFound:
		return outcome(NotExecuted, CodeProbeNotFound, "the probe has no record of the key")
	case resp.StatusCode == http.StatusOK:
		return probeBody(resp, fence)
	}
	return statusOutcome(Unknown, resp)
}

func probeBody(resp *http.Response, fence bool) Outcome {
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
	return a.outcome(fence)
}

func (a probeAnswer) outcome(fence bool) Outcome {
	switch {
	case a.Status == "succeeded":
		return Outcome{Status: Succeeded, Result: a.Result}
	case a.Status == "failed":
		return outcome(Failed, CodeProbeFailed, compactJSON(a.Error))
	case a.Status == "fenced" && fence:
		return outcome(NotExecuted, CodeProbeFenced, "the tool never saw the key and refuses it from now on")
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
