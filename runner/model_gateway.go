package runner

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/gateway"
)

// providerVars are never passed from the runner's environment to a worker while the
// gateway serves (an agent's pass_env naming one is ignored): the provider's key
// stays with the gateway, and the addresses are the gateway's.
var providerVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
	"OPENAI_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "CODEX_API_KEY"}

// gatewayPort is the model gateway's port on the runner's loopback (and in each run's
// private network); 0 without a gateway. Read once, in New.
func (p *confiner) gatewayPort() uint16 { return p.gwPort }

// gatewayPortOf is the port cfg's gateway service listens on; 0 without one.
func gatewayPortOf(cfg Config) uint16 {
	if cfg.Gateway == nil || cfg.GatewayService == nil {
		return 0
	}
	_, port, err := net.SplitHostPort(cfg.GatewayService.Addr())
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(port, 10, 16)
	return uint16(n)
}

// openGateway issues the attempt's gateway credential, held to what the attempt
// reserved of its budgets, and returns the worker's environment for it: the
// gateway's address and the credential in the variables its clients read. A call
// refused for the budget cancels the run with errBudgetOverrun, so the attempt ends
// at stage budget with what was metered. Without a gateway it returns nothing.
func (p *confiner) openGateway(tr *taskRun, ar *attemptRun, cancel context.CancelCauseFunc) []string {
	port := p.gatewayPort()
	if port == 0 {
		return nil
	}
	var g gateway.Grant
	if r := ar.reserve.ReserveUSD; r != nil {
		g.Caps = []gateway.Cap{{Key: fmt.Sprintf("task:%d", tr.task.ID), RemainingUSD: *r}}
		g.OnBudget = func(string) {
			cancel(fmt.Errorf("%w: the model gateway refused a call past the %s the attempt reserved", errBudgetOverrun, contract.USD(*r)))
		}
	}
	ar.lease = p.cfg.Gateway.Issue(g)
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	cred := ar.lease.Credential()
	return []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=" + cred,
		"OPENAI_BASE_URL=" + base + "/v1", "OPENAI_API_KEY=" + cred, "GOOGLE_GEMINI_BASE_URL=" + base, "GEMINI_API_KEY=" + cred}
}

// closeGateway revokes the attempt's credential and makes what the gateway metered
// the attempt's usage, keeping the worker's own report beside it (flagged when it
// says otherwise). It returns the cap that refused one of the attempt's calls, ""
// when none did: such an attempt ends at stage budget even when its worker, told
// "no", exited on its own before the refusal's cancel reached the run. Calling it
// again after the credential is revoked does nothing and returns "".
func (p *confiner) closeGateway(ar *attemptRun) (budgetKey string) {
	if ar.lease == nil {
		return ""
	}
	m := ar.lease.Revoke()
	ar.lease = nil
	if m.Calls == 0 && m.Refused == 0 {
		return "" // no call through the gateway: the report stands alone
	}
	ar.usage = models.ReconcileUsage(m.Usage(), ar.usage)
	if m.BudgetRefused > 0 {
		return m.BudgetKey
	}
	return ""
}

// GatewayStatus says what the pool's model gateway serves and how its confined runs
// reach the network, for the dashboard.
func (p *confiner) GatewayStatus() models.GatewayStatus {
	st := models.GatewayStatus{Network: "ports", Egress: slices.Clone(p.cfg.EgressAllow)}
	if p.privateNetwork() {
		st.Network = "private"
	}
	if p.gatewayPort() == 0 {
		return st
	}
	s := p.cfg.Gateway.Status()
	st.Serving, st.Addr, st.Live = true, p.cfg.GatewayService.Addr(), s.Live
	if s.Anthropic {
		st.Providers = append(st.Providers, "Anthropic")
	}
	if s.OpenAI {
		st.Providers = append(st.Providers, "OpenAI")
	}
	if s.Gemini {
		st.Providers = append(st.Providers, "Gemini")
	}
	return st
}
