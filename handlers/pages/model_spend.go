package pages

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
)

// modelSpend is what the model gateway metered per agent per day over the last days
// days (of agent agentID when it is not 0), for people; the service says who may
// read it.
func (p *Pages) modelSpend(c echo.Context, days int, agentID int64, testid string) (components.ModelSpendProps, error) {
	ms, err := p.svc.Stats.ModelSpend(c.Request().Context(), SignedIn(c), days, agentID)
	if err != nil {
		return components.ModelSpendProps{}, err
	}
	return modelSpendProps(ms, testid), nil
}

// modelSpendProps writes ms for people.
func modelSpendProps(ms *models.ModelSpend, testid string) components.ModelSpendProps {
	out := components.ModelSpendProps{TestID: testid, Days: ms.Days, Total: ms.Total.Summary()}
	for _, r := range ms.Rows {
		row := components.ModelSpendRow{Day: r.Day.Format("2 Jan"), DayKey: r.Day.Format(time.DateOnly), Agent: r.Agent,
			Cost: contract.USD(r.CostUSD), Tokens: grouped(r.Tokens), Attempts: r.Attempts}
		if row.Agent == "" {
			row.Agent = "agent #" + strconv.FormatInt(r.AgentID, 10)
		} else {
			row.Href = "/agents/" + strconv.FormatInt(r.AgentID, 10) + "/scorecard?days=" + strconv.Itoa(ms.Days)
		}
		var notes []string
		if r.Unpriced > 0 {
			notes = append(notes, fmt.Sprintf("%d of unknown cost", r.Unpriced))
		}
		if r.Mismatches > 0 {
			notes = append(notes, fmt.Sprintf("%d flagged: usage mismatch", r.Mismatches))
		}
		row.Note = strings.Join(notes, "; ")
		out.Rows = append(out.Rows, row)
	}
	return out
}
