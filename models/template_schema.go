package models

import "github.com/countersign/countersign/models/contract"

// The keys templates and task files may have, so that an unknown key is reported by
// its full path (steps[1].completion.foo). The contract's parts take their keys from
// models/contract, which reads them from the contract's own types.
var (
	stepsSchema = contract.ListOf(map[string]*contract.Schema{
		"name": nil, "role": nil, "brief": nil, "approve": nil, "verify": nil, "parallel": nil,
		"completion": contract.CompletionSchema(), "verification": contract.VerificationSchema(), "review": contract.ReviewSchema(),
	})
	templateYAMLSchema = contract.Fields(map[string]*contract.Schema{
		"name": nil, "version": nil, "description": nil, "steps": stepsSchema,
	})
	// JSON templates may be API output, which also carries the identity fields.
	templateJSONSchema = contract.Fields(map[string]*contract.Schema{
		"id": nil, "name": nil, "version": nil, "description": nil, "steps": stepsSchema,
		"creator_id": nil, "created_at": nil,
	})
	// The task front matter accepts the seed's own keys (estimate, workstream, phase,
	// status) so a seed task file imports as written.
	taskFrontMatterSchema = contract.Fields(map[string]*contract.Schema{
		"id": nil, "title": nil, "role": nil, "priority": nil, "depends_on": nil,
		"approve": nil, "verify": nil, "status": nil, "estimate": nil, "workstream": nil, "phase": nil,
		"completion": contract.CompletionSchema(), "verification": contract.VerificationSchema(), "review": contract.ReviewSchema(),
	})
)
