package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign/models"
)

// Upstream is one provider's real API: where it is and the key the gateway signs
// calls with. The key is added upstream-side only; no response carries it.
type Upstream struct {
	// BaseURL is the API's root as the provider's SDK writes its base URL:
	// "https://api.anthropic.com" (requests go to BaseURL + "/v1/messages"),
	// "https://api.openai.com/v1" (requests go to BaseURL + "/responses"),
	// "https://generativelanguage.googleapis.com" (requests go to BaseURL +
	// "/v1beta/models/…"). Empty: the provider is not served.
	BaseURL string
	Key     string
}

// Defaults for the estimate a call reserves before it is forwarded.
const (
	// DefaultMaxOutputTokens is the output a call that names no limit is reserved
	// for (OpenAI's max_output_tokens and max_completion_tokens are optional;
	// Anthropic requires max_tokens). Such a call that writes more is charged what
	// it wrote: the cap can then be passed by the difference.
	DefaultMaxOutputTokens = 32_000
	// DefaultBytesPerToken is how many request bytes the estimate counts as one
	// input token. Two is conservative: English text runs near four characters a
	// token and code near three, and the JSON around them is counted too.
	DefaultBytesPerToken = 2.0
	// DefaultMaxRequestBytes is the largest request body accepted (Anthropic's own
	// limit for the Messages API is 32 MB).
	DefaultMaxRequestBytes = 32 << 20
)

// Config sets up a Gateway.
type Config struct {
	Anthropic Upstream
	OpenAI    Upstream
	Gemini    Upstream
	// Prices price the calls (models.PriceOf picks the first matching pattern).
	// A call to a model without a price is metered in tokens; under a cap it is
	// refused, since its cost could not be held to the cap.
	Prices []models.ModelPrice
	// DefaultMaxOutputTokens, BytesPerToken and MaxRequestBytes: zero takes the
	// package's defaults.
	DefaultMaxOutputTokens int64
	BytesPerToken          float64
	MaxRequestBytes        int64
	// Transport reaches the upstreams; nil takes a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Log receives one line per refused call; nil discards.
	Log *slog.Logger
}

// upstream is a parsed Upstream.
type upstream struct {
	base *url.URL
	key  string
}

// parseUpstream checks u; nil when it is not configured.
func parseUpstream(name string, u Upstream) (*upstream, error) {
	if u.BaseURL == "" {
		return nil, nil
	}
	base, err := url.Parse(strings.TrimSuffix(u.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("gateway: %s base URL %q is not an http(s) URL", name, u.BaseURL)
	}
	if u.Key == "" {
		return nil, fmt.Errorf("gateway: %s has a base URL but no key", name)
	}
	return &upstream{base: base, key: u.Key}, nil
}

// withDefaults fills c's zero fields and checks it.
func (c Config) withDefaults() (Config, error) {
	if c.DefaultMaxOutputTokens <= 0 {
		c.DefaultMaxOutputTokens = DefaultMaxOutputTokens
	}
	if c.BytesPerToken <= 0 {
		c.BytesPerToken = DefaultBytesPerToken
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64 // many workers call one provider host at once
		c.Transport = t
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if p := models.PricesProblem(c.Prices); p != "" {
		return c, errors.New("gateway: " + p)
	}
	return c, nil
}
