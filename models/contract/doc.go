// Package contract is the completion contract a task is delegated with: its types
// (Contract, Completion, Verification, Review), their codec (JSON and YAML, strict,
// with the seeds' aliases), validation and normalisation, its rendering for the
// worker's brief, its generation from a task's words and workspace (Rules, Generate,
// ResolveContract), the stacks generation knows and the detection of a workspace's
// stacks.
//
// It imports nothing of the project: models (the governance rules, the service, the
// store) imports it, never the other way round. The few types both need, the domain
// error (Error, FieldErrors) and the spending cap (Budget), are declared here and
// named again in models.
//
// The contract's fields are declared once, on its types: the strict readers' key
// lists are read from their struct tags (schemaOf), and the codec's wire form of
// Completion is held to Completion's fields by its tests.
package contract
