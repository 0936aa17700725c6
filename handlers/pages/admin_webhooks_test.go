package pages_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

var secretRE = regexp.MustCompile(`data-testid="new-webhook-secret-value">(whsec_[A-Za-z0-9+/=]+)<`)

// TestWebhooksAdminPage: an admin adds a webhook (a wrong URL re-renders the form with
// the field's error and 422), sees its secret once, sees deliveries and the delivery
// log with status codes, redelivers with the CSRF token (not without), rotates the
// secret (shown once) and ends the rotation; anyone else is refused with 403 and
// changes nothing.
func TestWebhooksAdminPage(t *testing.T) {
	env := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	ada := env.login("ada")

	ada.get("/webhooks").want(t, http.StatusOK, `data-testid="webhook-add-form"`, `value="goal.pending_verify"`)

	bad := ada.post("/webhooks", url.Values{"name": {"ops"}, "url": {"ftp://example.test/x"}, "events": {"task.blocked"}})
	bad.want(t, http.StatusUnprocessableEntity, `data-testid="url-error"`, "http:// or https://")
	if strings.Contains(bad.Body, "new-webhook-secret") {
		t.Fatal("a refused webhook showed a secret")
	}
	bad = ada.post("/webhooks", url.Values{"name": {"ops"}, "url": {"https://hooks.example.test/T1/B2/c3"}})
	bad.want(t, http.StatusUnprocessableEntity, `data-testid="events-error"`)

	made := ada.post("/webhooks", url.Values{"name": {"ops"}, "url": {"https://hooks.example.test/T1/B2/c3"},
		"events": {"task.blocked", "goal.pending_verify"}})
	made.want(t, http.StatusOK, `data-testid="new-webhook-secret"`, `data-testid="webhook-row-ops"`)
	m := secretRE.FindStringSubmatch(made.Body)
	if m == nil {
		t.Fatalf("no secret shown:\n%s", excerpt(made.Body))
	}
	secret := m[1]
	hooks, err := env.db.ListWebhooks(ctx)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("webhooks %v %v", hooks, err)
	}
	w := hooks[0]
	if w.Secret != secret || !w.Enabled || strings.Join(w.Events, ",") != "goal.pending_verify,task.blocked" {
		t.Fatalf("stored %+v", w)
	}
	id := itoa64(w.ID)
	for _, path := range []string{"/webhooks", "/webhooks/" + id} {
		r := ada.get(path)
		r.want(t, http.StatusOK, "hooks.example.test")
		if strings.Contains(r.Body, secret) {
			t.Fatalf("GET %s shows the secret again", path)
		}
	}

	did := webhookRedelivery(t, env, ada, w, id)
	m = webhookRotation(t, env, ada, w, id, secret)
	// Edit: disabling is saved; a bad URL is 422 with the field's error.
	form := formValues(t, ada.get("/webhooks/"+id).Body, "/webhooks/"+id)
	form.Del("enabled")
	if r := ada.post("/webhooks/"+id, form); r.Status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", r.Status, excerpt(r.Body))
	}
	cur, _ := env.db.GetWebhook(ctx, w.ID)
	if cur.Enabled {
		t.Fatal("still enabled")
	}
	form.Set("url", "hooks.example.test")
	ada.post("/webhooks/"+id, form).want(t, http.StatusUnprocessableEntity, `data-testid="url-error"`)

	checkNoEventCarriesSecret(t, env, secret, m)
	webhookRefusedToOthers(t, env, id, did)
	if r := ada.post("/webhooks/"+id+"/delete", nil); r.Status != http.StatusSeeOther {
		t.Fatalf("delete: %d", r.Status)
	}
	if hooks, _ := env.db.ListWebhooks(ctx); len(hooks) != 0 {
		t.Fatal("not deleted")
	}
}

// checkNoEventCarriesSecret checks that no event carries a secret or the URL (a Slack
// URL is a credential), and that each change left a webhook.* event.
func checkNoEventCarriesSecret(t *testing.T, env *admEnv, secret string, m []string) {
	t.Helper()
	ctx := context.Background()
	// No event carries a secret or the URL (a Slack URL is a credential).
	events, err := env.db.ListEvents(ctx, 0, 1000)
	must(t, err)
	var hookEvents int
	for _, e := range events {
		if strings.HasPrefix(e.Type, "webhook.") {
			hookEvents++
		}
		for _, s := range []string{secret, m[1], "hooks.example.test"} {
			if strings.Contains(string(e.Data), s) {
				t.Fatalf("event %s carries a secret or the URL: %s", e.Type, e.Data)
			}
		}
	}
	if hookEvents < 5 {
		t.Fatalf("%d webhook.* events, want one per change", hookEvents)
	}
}

// webhookRedelivery makes a delivery that one attempt answered 500, shows it, and
// redelivers it (refused without the CSRF token); it returns the delivery id.
func webhookRedelivery(t *testing.T, env *admEnv, ada *admClient, w models.Webhook, id string) string {
	t.Helper()
	ctx := context.Background()
	// A goal waiting for its lead makes a delivery; one attempt answered 500.
	adaAgent, err := env.db.GetAgentByName(ctx, "ada")
	must(t, err)
	g := &models.Goal{Title: "Launch", CreatorID: adaAgent.ID}
	must(t, env.db.CreateGoal(ctx, g))
	must(t, env.db.AppendEvent(ctx, &models.Event{Type: "goal.state_changed", GoalID: &g.ID, Data: json.RawMessage(`{"from":"active","to":"pending_verify"}`)}))
	jobs, err := env.db.ClaimWebhookDeliveries(ctx, time.Now(), time.Minute, 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	d := jobs[0].Delivery
	claimed := d.NextAttemptAt
	now := time.Now().UTC()
	models.DefaultRetryPolicy.Settle(&d, models.HookOutcome{At: now, Status: 500, Err: "500 Internal Server Error: oops"})
	must(t, env.db.RecordWebhookAttempt(ctx, &d, claimed, &models.WebhookAttempt{DeliveryID: d.ID, WebhookID: w.ID, At: now,
		Status: 500, Error: "500 Internal Server Error: oops", DurationMS: 7}, ""))
	did := itoa64(d.ID)
	show := ada.get("/webhooks/" + id)
	show.want(t, http.StatusOK, `data-testid="delivery-`+did+`"`, `data-testid="attempt-row" data-status="500"`, "oops", "goal.pending_verify",
		`data-testid="redeliver-`+did+`"`)

	// Redeliver: refused without the CSRF token, done with it.
	before := env.eventCount()
	r := ada.do("POST", "/webhooks/"+id+"/deliveries/"+did+"/redeliver", url.Values{}, nil)
	if r.Status != http.StatusForbidden {
		t.Fatalf("redeliver without CSRF: %d", r.Status)
	}
	if env.eventCount() != before {
		t.Fatal("a refused redelivery changed something")
	}
	r = ada.post("/webhooks/"+id+"/deliveries/"+did+"/redeliver", nil)
	if r.Status != http.StatusSeeOther {
		t.Fatalf("redeliver: %d %s", r.Status, excerpt(r.Body))
	}
	got, err := env.db.GetWebhookDelivery(ctx, d.ID)
	must(t, err)
	if got.State != models.DeliveryPending || got.NextAttemptAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("after redeliver: %+v", got)
	}
	return did
}

// webhookRotation rotates the secret, shown once, then removes the previous one; it
// returns the secret match of the page that showed the new one.
func webhookRotation(t *testing.T, env *admEnv, ada *admClient, w models.Webhook, id, secret string) []string {
	t.Helper()
	ctx := context.Background()
	// Rotation: a second secret shown once, both stored; then the old one removed.
	rot := ada.post("/webhooks/"+id+"/rotate", nil)
	rot.want(t, http.StatusOK, `data-testid="new-webhook-secret"`, `data-testid="remove-previous-secret"`)
	m := secretRE.FindStringSubmatch(rot.Body)
	if m == nil || m[1] == secret {
		t.Fatal("no new secret shown")
	}
	cur, err := env.db.GetWebhook(ctx, w.ID)
	must(t, err)
	if cur.Secret != m[1] || cur.PreviousSecret != secret {
		t.Fatal("rotation not stored as current + previous")
	}
	ada.post("/webhooks/"+id+"/rotate", nil).want(t, http.StatusConflict)
	if r := ada.post("/webhooks/"+id+"/secret/remove", nil); r.Status != http.StatusSeeOther {
		t.Fatalf("remove previous: %d", r.Status)
	}
	cur, _ = env.db.GetWebhook(ctx, w.ID)
	if cur.PreviousSecret != "" || cur.Secret != m[1] {
		t.Fatal("previous secret not removed")
	}
	return m
}

// webhookRefusedToOthers checks that anyone else gets 403 on every webhook page and
// action, nothing changed.
func webhookRefusedToOthers(t *testing.T, env *admEnv, id, did string) {
	t.Helper()
	// Anyone else: 403 on every page and action, nothing changed.
	dev := env.browser().signIn("dev", admPassword, "/")
	before := env.eventCount()
	for _, path := range []string{"/webhooks", "/webhooks/" + id} {
		if r := dev.get(path); r.Status != http.StatusForbidden || strings.Contains(r.Body, "hooks.example.test") {
			t.Fatalf("dev GET %s: %d", path, r.Status)
		}
	}
	for _, path := range []string{"/webhooks", "/webhooks/" + id, "/webhooks/" + id + "/rotate", "/webhooks/" + id + "/delete",
		"/webhooks/" + id + "/deliveries/" + did + "/redeliver"} {
		r := dev.post(path, url.Values{"name": {"x"}, "url": {"http://evil.test"}, "events": {"task.blocked"}})
		if r.Status != http.StatusForbidden {
			t.Fatalf("dev POST %s: %d", path, r.Status)
		}
	}
	if env.eventCount() != before {
		t.Fatal("a refused request changed something")
	}
}
