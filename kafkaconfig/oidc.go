package kafkaconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

const (
	// tokenTimeout bounds one token request: an identity provider that
	// does not answer in this long is down, and the connection attempt
	// fails rather than hangs.
	tokenTimeout = 15 * time.Second
	// tokenEarly: a cached token is renewed this long before it expires,
	// so that a connection never authenticates with one about to lapse.
	tokenEarly = 30 * time.Second
	// maxTokenBody bounds the identity provider's answer.
	maxTokenBody = 1 << 20
)

// tokenSource fetches OAUTHBEARER tokens with the OAuth 2 client
// credentials grant (librdkafka's sasl.oauthbearer.method=oidc) and caches
// each until shortly before it expires. franz-go calls auth for every new
// connection and re-authentication. Safe for concurrent use.
type tokenSource struct {
	o    OAuth
	http *http.Client

	mu struct {
		sync.Mutex
		token   string
		expires time.Time
	}
}

func newTokenSource(o OAuth) *tokenSource {
	return &tokenSource{o: o, http: &http.Client{Timeout: tokenTimeout}}
}

func (s *tokenSource) auth(ctx context.Context) (oauth.Auth, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.token == "" || time.Now().After(s.mu.expires.Add(-tokenEarly)) {
		tok, exp, err := s.fetch(ctx)
		if err != nil {
			return oauth.Auth{}, err
		}
		s.mu.token, s.mu.expires = tok, exp
	}
	return oauth.Auth{Token: s.mu.token, Extensions: s.o.Extensions}, nil
}

func (s *tokenSource) fetch(ctx context.Context) (string, time.Time, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if s.o.Scope != "" {
		form.Set("scope", s.o.Scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.o.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: sasl.oauthbearer.token.endpoint.url: %w", ErrSASL, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(s.o.ClientID), url.QueryEscape(s.o.ClientSecret))
	resp, err := s.http.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: token endpoint %s: %w", ErrSASL, s.o.TokenEndpoint, err)
	}
	defer resp.Body.Close()
	return decodeToken(resp, s.o.TokenEndpoint)
}

// decodeToken reads a token response. The body of a refusal is not
// quoted: some providers echo the request, secret included.
func decodeToken(resp *http.Response, endpoint string) (string, time.Time, error) {
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("%w: token endpoint %s answered %s", ErrSASL, endpoint, resp.Status)
	}
	var body struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenBody)).Decode(&body); err != nil || body.AccessToken == "" {
		return "", time.Time{}, fmt.Errorf("%w: token endpoint %s: no access_token in the answer", ErrSASL, endpoint)
	}
	exp := time.Now().Add(time.Duration(max(body.ExpiresIn, 0)) * time.Second)
	return body.AccessToken, exp, nil
}
