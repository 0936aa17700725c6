package models

import (
	"time"

	"github.com/countersign/countersign/models/contract"
)

// Template is one version of a named workflow template. Versions are immutable: an
// edit saves a new version; runs keep the version they were started from.
type Template struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name" yaml:"name"`
	Version     int       `json:"version" yaml:"version,omitempty"`
	Description string    `json:"description,omitempty" yaml:"description,omitempty"`
	Steps       []Step    `json:"steps" yaml:"steps"`
	CreatorID   int64     `json:"creator_id" yaml:"-"`
	CreatedAt   time.Time `json:"created_at" yaml:"-"`
}

// Step is one step of a template: step N+1 is released only when step N is verified.
// Completion and Verification are the step's contract; Review optionally asks for an
// artifact review.
type Step struct {
	Name         string                `json:"name,omitempty" yaml:"name,omitempty"`
	Role         string                `json:"role" yaml:"role"`
	Brief        string                `json:"brief" yaml:"brief"`
	Approve      Policy                `json:"approve,omitempty" yaml:"approve,omitempty"`
	Verify       Policy                `json:"verify,omitempty" yaml:"verify,omitempty"`
	Completion   contract.Completion   `json:"completion" yaml:"completion,omitempty"`
	Verification contract.Verification `json:"verification" yaml:"verification,omitempty"`
	Review       *contract.Review      `json:"review,omitempty" yaml:"review,omitempty"`
	// Budget caps what each task of the step may spend.
	Budget *contract.Budget `json:"budget,omitempty" yaml:"budget,omitempty"`
	// Parallel names a group: consecutive steps with the same group run at the same
	// time once the step before the group is verified, and the step after the group
	// waits for all of them.
	Parallel string `json:"parallel,omitempty" yaml:"parallel,omitempty"`
}

// Contract returns the step's contract.
func (s Step) Contract() contract.Contract {
	return contract.Contract{Completion: s.Completion, Verification: s.Verification, Review: s.Review, Budget: s.Budget}
}

// Run is a template version instantiated for a goal.
type Run struct {
	ID              int64             `json:"id"`
	GoalID          int64             `json:"goal_id"`
	TemplateName    string            `json:"template"`
	TemplateVersion int               `json:"template_version"`
	Params          map[string]string `json:"params,omitempty"`
	CreatorID       int64             `json:"creator_id"`
	CreatedAt       time.Time         `json:"created_at"`
}
