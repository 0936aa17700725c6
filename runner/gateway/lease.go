package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
)

// credPrefix starts every credential, so one is recognisable in a leaked log.
const credPrefix = "csgw-"

// Grant is what one attempt may do through the gateway.
type Grant struct {
	// Caps are the budgets the attempt's calls count against (task, goal, agent).
	// None: the calls are metered but not capped.
	Caps []Cap
	// OnBudget, when set, is called once, with the refusing cap's key, the first time
	// a call is refused for a budget, so the caller can end the attempt at stage
	// budget without waiting for the worker to notice. It runs on a goroutine of its
	// own, so it may block and may Revoke the lease.
	OnBudget func(key string)
}

// Lease is one attempt's credential: live from Issue until Revoke.
type Lease struct {
	gw    *Gateway
	hash  [sha256.Size]byte
	cred  string
	pools []*pool
	grant Grant

	ctx    context.Context // cancelled by Revoke, which ends the calls in flight
	cancel context.CancelFunc
	calls  sync.WaitGroup

	mu     sync.Mutex
	m      Metered
	dead   bool
	budget sync.Once
	revoke sync.Once
}

// Issue creates a credential for g: 32 random bytes (crypto/rand), base64url, with
// the prefix "csgw-". The gateway keeps only its SHA-256, so lookups compare hashes
// (a map lookup leaks nothing about the secret). The provider's key never leaves the
// gateway; the credential is what the worker's client sends as its API key.
func (gw *Gateway) Issue(g Grant) *Lease {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (it crashes the program instead)
	cred := credPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lease{gw: gw, hash: sha256.Sum256([]byte(cred)), cred: cred, grant: g, ctx: ctx, cancel: cancel}
	l.pools = gw.ledger.join(g.Caps)
	gw.mu.Lock()
	gw.leases[l.hash] = l
	gw.mu.Unlock()
	return l
}

// Credential is the secret the worker uses as its API key (x-api-key, or
// Authorization: Bearer, as ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN and
// OPENAI_API_KEY send it; x-goog-api-key or ?key=, as GEMINI_API_KEY is sent).
func (l *Lease) Credential() string { return l.cred }

// Metered is what the credential's calls have used so far.
func (l *Lease) Metered() Metered {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.clone()
}

// Revoke kills the credential and returns its final usage. Calls in flight are
// ended (their upstream requests cancelled) and settled before it returns: a cut
// stream is charged its reservation. Every later call with the credential is refused
// as unauthenticated. Idempotent: later calls return the same usage.
func (l *Lease) Revoke() Metered {
	l.revoke.Do(func() {
		l.gw.mu.Lock()
		delete(l.gw.leases, l.hash)
		l.gw.mu.Unlock()
		l.mu.Lock()
		l.dead = true
		l.mu.Unlock()
		l.cancel()
		l.calls.Wait()
		l.gw.ledger.leave(l.pools, l.Metered().CostUSD)
	})
	return l.Metered()
}

// begin admits a call, false when the credential is dead. A call begun is waited
// for by Revoke.
func (l *Lease) begin() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return false
	}
	l.calls.Add(1)
	return true
}

// end is the end of a call begun.
func (l *Lease) end() { l.calls.Done() }

// refused counts a call the gateway answered itself; budgetKey names the cap that
// refused it, "" for other refusals.
func (l *Lease) refused(budgetKey string) {
	l.mu.Lock()
	l.m.Refused++
	if budgetKey != "" {
		l.m.BudgetRefused++
		if l.m.BudgetKey == "" {
			l.m.BudgetKey = budgetKey
		}
	}
	l.mu.Unlock()
	if budgetKey != "" && l.grant.OnBudget != nil {
		// Not on the refused call's goroutine: Revoke waits for that call to end.
		l.budget.Do(func() { go l.grant.OnBudget(budgetKey) })
	}
}

// forwarded counts a call sent upstream.
func (l *Lease) forwarded() {
	l.mu.Lock()
	l.m.Calls++
	l.mu.Unlock()
}

// lookup finds the live lease whose credential r carries, nil when none does.
func (gw *Gateway) lookup(r *http.Request) *Lease {
	cred := credentialOf(r)
	if !strings.HasPrefix(cred, credPrefix) {
		return nil
	}
	h := sha256.Sum256([]byte(cred))
	gw.mu.RLock()
	defer gw.mu.RUnlock()
	return gw.leases[h]
}

// credentialOf is the credential r carries: x-api-key (Anthropic's SDKs),
// Authorization: Bearer (Anthropic's auth token, OpenAI's API key), or Gemini's
// x-goog-api-key or ?key=.
func credentialOf(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return strings.TrimSpace(k)
	}
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return geminiCredential(r)
}
