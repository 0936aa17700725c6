package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/gateway"
)

// gatewayConfig is how the runner's model gateway and its runs' network are set.
type gatewayConfig struct {
	Gateway      string // on or off
	GatewayAddr  string // where it listens on the runner's host
	AnthropicURL string // the Messages API upstream
	OpenAIURL    string // the Responses and Chat Completions upstream
	GeminiURL    string // the Gemini API upstream
	Network      string // private or ports
	EgressAllow  string // comma-separated host patterns
}

// gatewayFlags adds the model gateway's and the network's flags.
func gatewayFlags(fs *flag.FlagSet, g *gatewayConfig) {
	fs.StringVar(&g.Gateway, "gateway", envOr("on", "COUNTERSIGN_GATEWAY"), "model gateway: on (workers reach models only through Countersign, which meters every call and holds the keys: ANTHROPIC_API_KEY, OPENAI_API_KEY and GEMINI_API_KEY from this process's environment) or off (env COUNTERSIGN_GATEWAY)")
	fs.StringVar(&g.GatewayAddr, "gateway-addr", envOr("127.0.0.1:0", "COUNTERSIGN_GATEWAY_ADDR"), "loopback address the model gateway listens on; port 0 picks a free one (env COUNTERSIGN_GATEWAY_ADDR)")
	fs.StringVar(&g.AnthropicURL, "gateway-anthropic-url", envOr("https://api.anthropic.com", "COUNTERSIGN_GATEWAY_ANTHROPIC_URL"), "Anthropic API the gateway forwards to (env COUNTERSIGN_GATEWAY_ANTHROPIC_URL)")
	fs.StringVar(&g.OpenAIURL, "gateway-openai-url", envOr("https://api.openai.com/v1", "COUNTERSIGN_GATEWAY_OPENAI_URL"), "OpenAI API the gateway forwards to (env COUNTERSIGN_GATEWAY_OPENAI_URL)")
	fs.StringVar(&g.GeminiURL, "gateway-gemini-url", envOr("https://generativelanguage.googleapis.com", "COUNTERSIGN_GATEWAY_GEMINI_URL"), "Gemini API the gateway forwards to (env COUNTERSIGN_GATEWAY_GEMINI_URL)")
	fs.StringVar(&g.Network, "network", envOr("private", "COUNTERSIGN_NETWORK"), "confined runs' network: private (a network namespace each, reaching only Countersign's API, the gateway and the egress proxy; needs CAP_SYS_ADMIN, else ports) or ports (Landlock's port rules alone, any host) (env COUNTERSIGN_NETWORK)")
	fs.StringVar(&g.EgressAllow, "egress-allow", envOr("", "COUNTERSIGN_EGRESS_ALLOW"), "comma-separated hosts (registry.npmjs.org, *.github.com:443) runs in a private network may reach through the egress proxy; none by default (env COUNTERSIGN_EGRESS_ALLOW)")
}

// egressAllow is the egress allowlist's patterns.
func (g gatewayConfig) egressAllow() []string {
	var out []string
	for _, s := range strings.Split(g.EgressAllow, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// private reports whether runs get a private network, refusing an unknown value.
func (g gatewayConfig) private() (bool, error) {
	switch g.Network {
	case "private":
		return true, nil
	case "ports":
		return false, nil
	}
	return false, fmt.Errorf("flag -network: %q is neither private nor ports", g.Network)
}

// startGateway starts the model gateway g asks for, pricing calls with the project
// rules' prices as they are now: nil, nil when it is off. The provider keys are this
// process's ANTHROPIC_API_KEY, OPENAI_API_KEY and GEMINI_API_KEY; a provider without
// one is not served.
func startGateway(ctx context.Context, g gatewayConfig, templates rulesSource, log *slog.Logger) (*gateway.Gateway, *gateway.Service, error) {
	switch g.Gateway {
	case "off":
		return nil, nil, nil
	case "on":
	default:
		return nil, nil, fmt.Errorf("flag -gateway: %q is neither on nor off", g.Gateway)
	}
	prices := models.DefaultPrices()
	if rules, err := templates.Rules(ctx); err == nil && len(rules.Prices) > 0 {
		prices = rules.Prices
	}
	cfg := gateway.Config{Prices: prices, Log: log}
	if key := os.Getenv("ANTHROPIC_API_KEY"); key != "" {
		cfg.Anthropic = gateway.Upstream{BaseURL: g.AnthropicURL, Key: key}
	}
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg.OpenAI = gateway.Upstream{BaseURL: g.OpenAIURL, Key: key}
	}
	if key := os.Getenv("GEMINI_API_KEY"); key != "" {
		cfg.Gemini = gateway.Upstream{BaseURL: g.GeminiURL, Key: key}
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	s := gateway.NewService(gw, g.GatewayAddr)
	if err := s.Start(ctx); err != nil {
		return nil, nil, err
	}
	log.Info("model gateway listening", "addr", s.Addr(), "anthropic", cfg.Anthropic.BaseURL != "", "openai", cfg.OpenAI.BaseURL != "", "gemini", cfg.Gemini.BaseURL != "")
	return gw, s, nil
}
