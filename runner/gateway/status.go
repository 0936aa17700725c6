package gateway

// Status is what the gateway can say of itself for the dashboard.
type Status struct {
	// Anthropic, OpenAI and Gemini say which providers are served (a base URL and a
	// key).
	Anthropic, OpenAI, Gemini bool
	// Live counts the credentials alive now: attempts whose workers may call.
	Live int
}

// Status reports the providers served and the live credentials.
func (gw *Gateway) Status() Status {
	gw.mu.RLock()
	defer gw.mu.RUnlock()
	return Status{Anthropic: gw.anthropic != nil, OpenAI: gw.openai != nil, Gemini: gw.gemini != nil, Live: len(gw.leases)}
}
