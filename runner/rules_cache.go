package runner

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// rulesCache keeps the project rules the pool read last, for rulesTTL, unless an
// event from another writer made them stale (forgetRules).
type rulesCache struct {
	rulesMu  sync.Mutex
	rulesVal *models.ProjectRules // cached by rules; nil when none
	rulesAt  time.Time
	rulesGen int // bumped by forgetRules
}

// cachedRules returns the cached project rules while they are fresh, else reads them
// with read and caches them unless forgetRules ran meanwhile.
func (p *rulesCache) cachedRules(read func() (models.ProjectRules, error)) (models.ProjectRules, error) {
	p.rulesMu.Lock()
	gen, cached, at := p.rulesGen, p.rulesVal, p.rulesAt
	p.rulesMu.Unlock()
	if cached != nil && time.Since(at) < rulesTTL {
		return *cached, nil
	}
	at = time.Now()
	r, err := read()
	if err != nil {
		return r, err
	}
	p.rulesMu.Lock()
	if p.rulesGen == gen {
		p.rulesVal, p.rulesAt = &r, at
	}
	p.rulesMu.Unlock()
	return r, nil
}

// forgetRules drops the cached project rules: an event from another writer may have
// been rules.changed.
func (p *rulesCache) forgetRules() {
	p.rulesMu.Lock()
	p.rulesGen++
	p.rulesVal = nil
	p.rulesMu.Unlock()
}

// rules returns the project rules, read at most once per rulesTTL unless another
// writer's events arrived since.
func (p *common) rules(ctx context.Context) (models.ProjectRules, error) {
	return p.cachedRules(func() (models.ProjectRules, error) { return p.svc.Templates.Rules(ctx) })
}

// rulesIn is rules read through tx when the copy is stale: inside a claim, whose
// transaction may hold the only connection (SQLite).
func (p *common) rulesIn(ctx context.Context, tx models.Tx) (models.ProjectRules, error) {
	return p.cachedRules(func() (models.ProjectRules, error) { return models.RulesIn(ctx, tx) })
}
