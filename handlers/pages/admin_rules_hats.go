package pages

import (
	"net/url"
	"reflect"
	"regexp"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/rules"
)

// hatErrRE matches ValidateHats' keys of one conflict, shown on the row's input.
var hatErrRE = regexp.MustCompile(`^hats\[(\d+)\]\.conflicts_with\[\d+\]$`)

// parseHatRows reads the hat rows of the rules form, dropping blank ones.
func parseHatRows(form url.Values) []rules.HatRow {
	var out []rules.HatRow
	for i := 0; i < maxRuleRows; i++ {
		if _, ok := form[rules.HatField(i, "name")]; !ok {
			break
		}
		r := rules.HatRow{Name: strings.TrimSpace(form.Get(rules.HatField(i, "name"))), ConflictsWith: form.Get(rules.HatField(i, "conflicts_with"))}
		if r.Name != "" || strings.TrimSpace(r.ConflictsWith) != "" {
			out = append(out, r)
		}
	}
	return out
}

// hatsFromForm builds the hat table; the defaults, as shown, stay the defaults (nil),
// so that the saved rules follow them.
func hatsFromForm(rows []rules.HatRow) []models.Hat {
	var hats []models.Hat
	for _, r := range rows {
		hats = append(hats, models.Hat{Name: strings.ToLower(r.Name), ConflictsWith: splitList(strings.ToLower(r.ConflictsWith))})
	}
	if reflect.DeepEqual(hats, models.DefaultHats()) {
		return nil
	}
	return hats
}

// hatRows shows a hat table in the form.
func hatRows(hats []models.Hat) []rules.HatRow {
	out := make([]rules.HatRow, len(hats))
	for i, h := range hats {
		out[i] = rules.HatRow{Name: h.Name, ConflictsWith: strings.Join(h.ConflictsWith, ", ")}
	}
	return out
}
