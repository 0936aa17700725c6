package main

import (
	"context"

	"github.com/countersign/countersign/models"
)

// The narrow interfaces the command's helpers depend on, declared where they are
// used; the commands wire models.Service's aggregates into them.

// agentCreator is what the first run needs of the agent aggregate (models.AgentService): creating the first admin.
type agentCreator interface {
	CreateAgent(ctx context.Context, actor *models.Agent, a *models.Agent, password string) error
}

// rulesSource is what the gateway's start needs of the template aggregate (models.TemplateService): the project's prices.
type rulesSource interface {
	Rules(ctx context.Context) (models.ProjectRules, error)
}
