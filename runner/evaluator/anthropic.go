package evaluator

import (
	"context"
	"errors"
	"fmt"
	"github.com/countersign/countersign/models"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// DefaultModel is the model the Anthropic evaluator uses unless configured otherwise:
// the newest small Haiku model the SDK names. Evaluation is a short, read-only
// judgement; a small model is fast and cheap next to the worker.
const DefaultModel = anthropic.ModelClaudeHaiku5_5

// Defaults of AnthropicConfig.
const (
	DefaultMaxTokens        = 1024
	DefaultAnthropicTimeout = 2 * time.Minute
)

// AnthropicConfig configures the Anthropic evaluator. The zero value of every field
// but APIKey means its default. It formats (%v, slog) without the key.
type AnthropicConfig struct {
	// APIKey authenticates to the API; it comes from ANTHROPIC_API_KEY (read by the
	// caller, not here) and is never logged.
	APIKey string
	// Model defaults to DefaultModel.
	Model string
	// BaseURL overrides the API endpoint (a gateway or proxy; tests); empty means the
	// SDK's default, https://api.anthropic.com. It must pass CheckBaseURL. It is not
	// read from ANTHROPIC_BASE_URL here: callers that honour it use ResolveBaseURL.
	BaseURL string
	// MaxTokens bounds the reply; DefaultMaxTokens when zero.
	MaxTokens int64
	// MaxOutputBytes bounds the worker output sent; DefaultMaxOutputBytes when zero.
	MaxOutputBytes int
	// Timeout bounds one evaluation, retries included; DefaultAnthropicTimeout when zero.
	Timeout time.Duration
	// MaxRetries is how often the SDK retries a failed request (429, 5xx, connection
	// errors) with backoff; zero means the SDK's default (2), negative means none.
	MaxRetries int
	// HTTPClient, when set, replaces the SDK's HTTP client.
	HTTPClient *http.Client
}

// String describes the configuration without the API key.
func (c AnthropicConfig) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("anthropic{model=%s base_url=%s api_key=%s timeout=%s}", c.Model, RedactURL(c.BaseURL), key, c.Timeout)
}

// LogValue describes the configuration for slog without the API key.
func (c AnthropicConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("model", c.Model),
		slog.String("base_url", RedactURL(c.BaseURL)),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Duration("timeout", c.Timeout),
	)
}

// Anthropic evaluates through the Anthropic Messages API.
type Anthropic struct {
	client    anthropic.Client
	model     string
	maxTokens int64
	maxOutput int
	timeout   time.Duration
}

// NewAnthropic returns an evaluator calling the Messages API with cfg. It reads
// nothing from the environment itself (the SDK's environment defaults are off), so
// what runs is exactly what cfg says. It fails without an API key and with a base
// URL CheckBaseURL refuses.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("anthropic evaluator: no API key (set ANTHROPIC_API_KEY)")
	}
	if cfg.BaseURL != "" {
		if err := CheckBaseURL(cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("anthropic evaluator: base URL: %w", err)
		}
	}
	a := &Anthropic{
		model:     cfg.Model,
		maxTokens: cfg.MaxTokens,
		maxOutput: cfg.MaxOutputBytes,
		timeout:   cfg.Timeout,
	}
	if a.model == "" {
		a.model = DefaultModel
	}
	if a.maxTokens <= 0 {
		a.maxTokens = DefaultMaxTokens
	}
	if a.maxOutput <= 0 {
		a.maxOutput = DefaultMaxOutputBytes
	}
	if a.timeout <= 0 {
		a.timeout = DefaultAnthropicTimeout
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.MaxRetries != 0 {
		opts = append(opts, option.WithMaxRetries(max(cfg.MaxRetries, 0)))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	a.client = anthropic.NewClient(opts...)
	return a, nil
}

// Model returns the model the evaluator asks.
func (a *Anthropic) Model() string { return a.model }

// Evaluate asks the model for a verdict on r. Transport errors, API errors, timeouts,
// a truncated or refused reply and a reply that is not exactly one verdict of the
// model's own (two verdicts, or one quoted from the output) are *InfraError.
// Whenever the API replied, the Verdict's Usage holds the tokens the reply reports
// and the model that answered (with an error too: the call was billed), never a cost.
func (a *Anthropic) Evaluate(ctx context.Context, r Request) (Verdict, error) {
	if strings.TrimSpace(r.Evaluate) == "" {
		return Verdict{}, infra("anthropic", errors.New("nothing to evaluate: the contract has no evaluate criteria"))
	}
	shown := Bound(r.Output, a.maxOutput)
	reply, err := a.Complete(ctx, systemPrompt, prompt(r, shown))
	if err != nil {
		return Verdict{}, err
	}
	// Exactly one verdict, the model's own: none quoted from the output it was shown.
	v, _, err := parseVerdict(reply.Text, shown)
	if err != nil {
		if reply.StopReason != "" && reply.StopReason != string(anthropic.StopReasonEndTurn) {
			err = fmt.Errorf("%w (stop reason %s)", err, reply.StopReason)
		}
		return Verdict{Usage: reply.Usage}, infra("anthropic", err)
	}
	// Only the API's own usage counts: ParseVerdict never takes one from model text.
	v.Usage = reply.Usage
	return v, nil
}

// Reply is the text of a Messages API reply, why it stopped, and what it spent.
type Reply struct {
	Text       string
	StopReason string
	Usage      *models.Usage
}

// Complete sends one system and one user message and returns the reply. Errors (no
// reply: transport, API, timeout) are *InfraError and spent nothing.
func (a *Anthropic) Complete(ctx context.Context, system, user string) (Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	msg, err := a.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     a.model,
		MaxTokens: a.maxTokens,
		System:    []anthropic.TextBlockParam{{Text: system}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock(user)),
		},
	})
	if err != nil {
		// An API error is not billed, and a transport error leaves no usage to read.
		return Reply{}, infra("anthropic", describeAPIError(ctx, err, a.timeout))
	}
	var text strings.Builder
	for _, block := range msg.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	return Reply{Text: text.String(), StopReason: string(msg.StopReason), Usage: messageUsage(msg, a.model)}, nil
}

// EnvBaseURL is the environment variable ResolveBaseURL falls back on: the one
// Anthropic's SDKs and Claude Code read, so a gateway or proxy set up for them serves
// the evaluator as well.
const EnvBaseURL = "ANTHROPIC_BASE_URL"

// ResolveBaseURL returns the Messages API endpoint the Anthropic evaluator should
// use: explicit when it is set (a flag, named by explicitName in errors), else
// $ANTHROPIC_BASE_URL, else "" (the SDK's default). A value that CheckBaseURL
// refuses is an error naming where it came from, so a typo fails at startup rather
// than as an outage on every evaluation.
func ResolveBaseURL(explicit, explicitName string) (string, error) {
	base, from := strings.TrimSpace(explicit), explicitName
	if base == "" {
		base, from = strings.TrimSpace(os.Getenv(EnvBaseURL)), EnvBaseURL
	}
	if base == "" {
		return "", nil
	}
	if err := CheckBaseURL(base); err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	return base, nil
}

// CheckBaseURL reports whether s can be an API endpoint: an absolute http or https
// URL with a host and no query or fragment (the SDK would drop them silently). The
// error quotes s without any password in it.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the whole value, password included.
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q is not an absolute http:// or https:// URL", u.Redacted())
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q has no host", u.Redacted())
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("%q must not have a query or fragment", u.Redacted())
	}
	if _, err := URLPort(s); err != nil {
		return fmt.Errorf("%q: %w", u.Redacted(), err)
	}
	return nil
}

// URLPort is the TCP port an http or https URL connects to: its explicit port, else
// 80 or 443 by scheme. A confined process that must reach the URL needs it allowed.
func URLPort(s string) (uint16, error) {
	u, err := url.Parse(s)
	if err != nil {
		return 0, errors.New("not a URL")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("port %q is not a TCP port", p)
		}
		return uint16(n), nil
	}
	switch u.Scheme {
	case "http":
		return 80, nil
	case "https":
		return 443, nil
	}
	return 0, fmt.Errorf("scheme %q has no default port", u.Scheme)
}

// RedactURL is s with any password replaced by "xxxxx", for logs; a value that does
// not parse is replaced whole, since it cannot be told where a password would be.
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// describeAPIError shortens an SDK error to what an operator needs (status, type,
// message), keeping the cause for errors.Is.
func describeAPIError(ctx context.Context, err error, timeout time.Duration) error {
	var apiErr *anthropic.Error
	switch {
	case errors.As(err, &apiErr):
		return fmt.Errorf("API returned %d %s: %s", apiErr.StatusCode, http.StatusText(apiErr.StatusCode), clip(apiErr.RawJSON(), 300))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no reply within %s: %w", timeout, context.DeadlineExceeded)
	}
	return err
}
