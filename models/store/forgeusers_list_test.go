package store_test

import (
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestListForgeUsersNamesLogins: ListForgeUsers returns each mapping with its login,
// forge and agent, on both dialects.
func TestListForgeUsersNamesLogins(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		a := &models.Agent{Name: "rev", Kind: models.KindHuman, Roles: []string{"reviewer"}}
		must(t, db.CreateAgent(ctx, a))
		f := &models.Forge{Name: "gh", Kind: models.ForgeGitHub, Repo: "acme/widgets", Token: "t", WebhookSecret: "s"}
		must(t, db.CreateForge(ctx, f))
		must(t, db.PutForgeUser(ctx, &models.ForgeUser{ForgeID: f.ID, Login: "octo", AgentID: a.ID}))
		users, err := db.ListForgeUsers(ctx, f.ID)
		must(t, err)
		equal(t, "users", users, []models.ForgeUser{{ForgeID: f.ID, Login: "octo", AgentID: a.ID, Agent: "rev"}})
	})
}
