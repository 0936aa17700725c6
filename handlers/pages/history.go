package pages

import (
	"fmt"
	"net/url"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
)

// historyLimit is how many changes the rules and template pages list.
const historyLimit = 20

// historyItems shows audit history entries; label gives each its title and link.
func historyItems(es []models.HistoryEntry, label func(models.Change) (title, href string)) []components.HistoryItem {
	out := make([]components.HistoryItem, 0, len(es))
	for _, e := range es {
		title, href := label(e.Change)
		out = append(out, components.HistoryItem{Title: title, Href: href, Actor: e.Change.By, At: e.At,
			Changed: e.Change.Changed, Diff: e.Change.Diff})
	}
	return out
}

// rulesChangeLabel titles a change of the project rules.
func rulesChangeLabel(models.Change) (string, string) { return "Rules saved", "" }

// templateChangeLabel titles a template change by the version it saved, linked to it.
func templateChangeLabel(c models.Change) (string, string) {
	title := fmt.Sprintf("v%d", c.Version)
	if c.FromVersion == 0 {
		title += " (new)"
	} else {
		title += fmt.Sprintf(" (from v%d)", c.FromVersion)
	}
	return title, fmt.Sprintf("/templates/%s?version=%d", url.PathEscape(c.Name), c.Version)
}
