package pages

import "github.com/labstack/echo/v4"

// adminRoutes registers the templates, rules, agents and ledger pages and actions:
//
//	GET  /templates                  list (latest version of each)
//	GET  /templates/new              editor for a new template
//	POST /templates/new              editor actions (op=add|remove:i|up:i|down:i|preview:i|remove-criterion:i:j|remove-held-out:i:j|save)
//	GET  /templates/import           YAML/JSON import form
//	POST /templates/import           import (saves the next version of the name)
//	GET  /templates/:name            editor of the latest version; ?version=N read-only
//	POST /templates/:name            editor actions, as for /templates/new
//	GET  /templates/:name/yaml       a version as YAML text (?version=N)
//	GET  /rules                      project rules for contract generation
//	POST /rules                      save the rules
//	POST /rules/try                  show the contract the saved rules generate for a task
//	POST /rules/stacks               show which stacks a directory on the server matches (admin, editor, lead)
//	GET  /agents                     agents with status; add form for admins
//	POST /agents                     add an agent (admin)
//	GET  /agents/:id                 an agent; edit form for admins
//	GET  /agents/:id/scorecard       its scorecard and charts (?days=7|30; agent_page.go)
//	POST /agents/:id/canaries        a lead schedules a canary task for it (canary.go)
//	POST /agents/:id                 save an agent (admin)
//	POST /agents/:id/password        set a person's password (admin), or change your own
//	POST /agents/:id/tokens          create a token, shown once on the page answered (admin)
//	POST /agents/:id/tokens/:tid/revoke  revoke a token (admin, or the agent itself)
//	GET  /ledger                     ledger entries, oldest first, ?after=ID pages
//	POST /ledger/verify              verify the local hash chain
//	GET  /ledger/:id                 one entry with its exact message bytes
//	/webhooks…                       signed notifications (admin only; admin_webhooks.go)
//	/forges…                         GitHub and GitLab repositories for pull requests (admin only; admin_forges.go)
//
// Every POST passes the session and CSRF middleware; the service checks roles again.
func (p *Pages) adminRoutes(g *echo.Group) {
	g.GET("/templates", p.templatesList)
	g.GET("/templates/new", p.templateNew)
	g.POST("/templates/new", p.templateEdit)
	g.GET("/templates/import", p.templateImportForm)
	g.POST("/templates/import", p.templateImport)
	g.GET("/templates/:name", p.templateShow)
	g.POST("/templates/:name", p.templateEdit)
	g.GET("/templates/:name/yaml", p.templateYAML)

	g.GET("/rules", p.rulesForm)
	g.POST("/rules", p.rulesSave)
	g.POST("/rules/try", p.rulesTry)
	g.POST("/rules/stacks", p.rulesStacks)

	g.GET("/agents", p.agentsList)
	g.POST("/agents", p.agentCreate)
	g.GET("/agents/:id", p.agentShow)
	g.GET("/agents/:id/scorecard", p.agentScorecard)
	g.POST("/agents/:id/canaries", p.agentCanary)
	g.POST("/agents/:id", p.agentUpdate)
	g.POST("/agents/:id/password", p.agentPassword)
	g.POST("/agents/:id/tokens", p.agentToken)
	g.POST("/agents/:id/tokens/:tid/revoke", p.agentTokenRevoke)

	g.GET("/ledger", p.ledgerList)
	g.POST("/ledger/verify", p.ledgerVerify)
	g.GET("/ledger/:id", p.ledgerEntry)

	p.webhookRoutes(g)
	p.forgeRoutes(g)
}
