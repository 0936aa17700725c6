package store_test

import (
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestForgeRoundTrip: forges, login mappings, pull requests and deliveries keep every
// field on both databases; a name in use and a delivery seen before are ECONFLICT; a
// task shows up as waiting for a pull request only while it has a commit, a forge
// builder and no pull request.
func TestForgeRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "admin")
		f := &models.Forge{Name: "origin", Kind: models.ForgeGitHub, BaseURL: "https://ghe.test/api/v3/", Repo: "acme/calc",
			TargetBranch: "main", Token: "ghp_x", WebhookSecret: "s3cret", CreatedAt: ts(1), UpdatedAt: ts(2)}
		allSet(t, f, "ID")
		must(t, db.CreateForge(ctx, f))
		got, err := db.GetForgeByName(ctx, "origin")
		must(t, err)
		f.UpdatedAt = got.UpdatedAt
		equal(t, "GetForgeByName", got, f)
		wantCode(t, db.CreateForge(ctx, &models.Forge{Name: "origin", Kind: models.ForgeGitLab, Repo: "a/b", Token: "t"}), models.ECONFLICT)

		builder := agent(t, db, "fixer", "developer")
		builder.Forge = "origin"
		must(t, db.UpdateAgent(ctx, builder))
		must(t, db.PutForgeUser(ctx, &models.ForgeUser{ForgeID: f.ID, Login: "fixer-bot", AgentID: builder.ID}))
		must(t, db.PutForgeUser(ctx, &models.ForgeUser{ForgeID: f.ID, Login: "fixer-bot", AgentID: boss.ID})) // replaces
		a, err := db.ForgeUserAgent(ctx, f.ID, "fixer-bot")
		must(t, err)
		if a.ID != boss.ID {
			t.Fatalf("fixer-bot maps to %s, want boss", a.Name)
		}
		users, err := db.ListForgeUsers(ctx, f.ID)
		must(t, err)
		if len(users) != 1 || users[0].Agent != "boss" {
			t.Fatalf("ListForgeUsers = %+v", users)
		}
		_, err = db.ForgeUserAgent(ctx, f.ID, "nobody")
		wantCode(t, err, models.ENOTFOUND)

		tk := task(t, db, boss.ID, "developer", nil)
		tk.BuilderID, tk.State, tk.Commit, tk.Branch = &builder.ID, models.TaskVerified, "0123456789abcdef0123456789abcdef01234567", "countersign/task-1"
		must(t, db.UpdateTask(ctx, tk))
		waiting, err := db.TasksWithoutPull(ctx, 10)
		must(t, err)
		if len(waiting) != 1 || waiting[0].ID != tk.ID {
			t.Fatalf("TasksWithoutPull = %+v, want task %d", waiting, tk.ID)
		}
		p := &models.ForgePull{TaskID: tk.ID, ForgeID: f.ID, Number: 7, URL: "https://ghe.test/acme/calc/pull/7", State: models.PullOpen,
			Commit: tk.Commit, Status: "success", StatusNote: "ok", Moved: "ff", Reviews: []string{"review:1"}, MergeSHA: "ee", Error: "e"}
		must(t, db.SaveForgePull(ctx, p))
		p.Number = 8
		must(t, db.SaveForgePull(ctx, p)) // an update, not a second row
		gp, err := db.FindForgePull(ctx, f.ID, 8)
		must(t, err)
		p.UpdatedAt = gp.UpdatedAt
		equal(t, "FindForgePull", gp, p)
		if waiting, _ := db.TasksWithoutPull(ctx, 10); len(waiting) != 0 {
			t.Fatalf("a task with a pull request still waits for one: %+v", waiting)
		}
		open, err := db.ListOpenForgePulls(ctx)
		must(t, err)
		if len(open) != 1 || !open[0].Seen("review:1") {
			t.Fatalf("ListOpenForgePulls = %+v", open)
		}

		must(t, db.AddForgeDelivery(ctx, f.ID, "d-1", ts(3)))
		wantCode(t, db.AddForgeDelivery(ctx, f.ID, "d-1", ts(4)), models.ECONFLICT)
		must(t, db.AddForgeDelivery(ctx, f.ID, "d-2", ts(9)))
		must(t, db.PruneForgeDeliveries(ctx, ts(5)))
		must(t, db.AddForgeDelivery(ctx, f.ID, "d-1", ts(10))) // forgotten
		wantCode(t, db.AddForgeDelivery(ctx, f.ID, "d-2", ts(10)), models.ECONFLICT)
		must(t, db.DeleteForge(ctx, f.ID))
		_, err = db.GetForgePull(ctx, tk.ID)
		wantCode(t, err, models.ENOTFOUND)
	})
}
