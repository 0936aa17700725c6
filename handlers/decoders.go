package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// The decoders below read the bodies that create tasks, goals and agents and change
// agents exactly as their handlers do (DecodeJSON into the handler's own type), for
// the fuzz targets in handlers/fuzz, which live apart so that fuzzing builds no
// database driver.

// DecodeTaskBody reads the body of POST /api/v1/tasks.
func DecodeTaskBody(c echo.Context) (*models.TaskSpec, error) {
	var spec models.TaskSpec
	return &spec, DecodeJSON(c, &spec)
}

// DecodeGoalBody reads the body of POST /api/v1/goals; the value is the handler's
// input (to walk, not to use).
func DecodeGoalBody(c echo.Context) (any, error) {
	var in goalInput
	return &in, DecodeJSON(c, &in)
}

// DecodeAgentBody reads the body of POST /api/v1/agents: the agent CreateAgent gets
// and the password.
func DecodeAgentBody(c echo.Context) (*models.Agent, string, error) {
	var in agentInput
	if err := DecodeJSON(c, &in); err != nil {
		return nil, "", err
	}
	return in.agent(), in.Password, nil
}

// DecodeAgentPatch reads the body of PATCH /api/v1/agents/{name} and applies it to a.
func DecodeAgentPatch(c echo.Context, a *models.Agent) error {
	var in agentPatch
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	in.apply(a)
	return nil
}
