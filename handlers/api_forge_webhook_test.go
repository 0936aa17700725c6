package handlers_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/forge/forgetest"
	"github.com/countersign/countersign/runner/forgesync"
)

// TestForgeWebhookEndpoint: POST /api/v1/forges/{name}/webhook needs no bearer token
// but the forge's secret: a delivery signed with another one is 401 and records
// nothing, a good one is 202, its replay 409, an unknown forge 404 — on both forges.
func TestForgeWebhookEndpoint(t *testing.T) {
	for _, kind := range []forge.Kind{forge.GitHub, forge.GitLab} {
		t.Run(string(kind), func(t *testing.T) {
			db, svc := handlertest.Open(t, "sqlite")
			fs := forgetest.NewGitHub(t, "acme", "calc", "ghp_token")
			if kind == forge.GitLab {
				fs = forgetest.NewGitLab(t, "acme/calc", "glpat-token")
			}
			forges, err := models.NewForges(svc)
			if err != nil {
				t.Fatal(err)
			}
			cfg := fs.Config()
			f := &models.Forge{Name: "origin", Kind: string(kind), BaseURL: cfg.BaseURL, Repo: cfg.Repo, Token: cfg.Token}
			secret, err := forges.Create(t.Context(), models.System, f)
			if err != nil {
				t.Fatal(err)
			}
			sync, err := forgesync.New(forgesync.Config{Service: svc, Forges: forges, PollEvery: -1})
			if err != nil {
				t.Fatal(err)
			}
			_, srv := handlertest.Serve(t, handlers.Deps{Service: svc, ForgeSync: sync})
			url := srv.URL + "/api/v1/forges/origin/webhook"
			push := fs.PushPayload("main", "someone", "")
			events := func() int {
				evs, err := db.ListEvents(t.Context(), 0, 1000)
				if err != nil {
					t.Fatal(err)
				}
				return len(evs)
			}
			before := events()
			if code := forgetest.SendWebhook(t, url, "not-"+secret, kind, push); code != http.StatusUnauthorized {
				t.Fatalf("a delivery signed with another secret: %d, want 401", code)
			}
			if code := forgetest.SendWebhook(t, srv.URL+"/api/v1/forges/nope/webhook", secret, kind, push); code != http.StatusNotFound {
				t.Fatalf("a delivery to an unknown forge: %d, want 404", code)
			}
			req := forgetest.NewWebhookRequest(t, url, secret, kind, push)
			body, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			var codes []int
			for range 2 {
				again, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
				if err != nil {
					t.Fatal(err)
				}
				again.Header = req.Header.Clone()
				resp, err := http.DefaultClient.Do(again)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				codes = append(codes, resp.StatusCode)
			}
			if codes[0] != http.StatusAccepted || codes[1] != http.StatusConflict {
				t.Fatalf("a delivery and its replay: %v, want [202 409]", codes)
			}
			if n := events(); n != before {
				t.Fatalf("deliveries about no task of Countersign's recorded %d events", n-before)
			}
		})
	}
}
