package contract

import "slices"

// AlwaysProtected are protected in every workspace, whatever its stacks: the CI
// configurations a team's own checks read, which a worker has no business changing to
// pass.
var AlwaysProtected = []string{".github/workflows/**", ".gitlab-ci.yml", ".pre-commit-config.yaml"}

// ProtectedFor lists the protect patterns of a task with verification v: those of the
// stacks its workspace matched (v.Stacks, as the rules define them now) with their
// dependency pins unless v.DependenciesMayChange, the contract's own (v.Protect) and
// AlwaysProtected, sorted, without repeats.
func (r Rules) ProtectedFor(v Verification) []string {
	out := slices.Clone(AlwaysProtected)
	for _, st := range r.Stacks {
		if slices.Contains(v.Stacks, st.Name) {
			out = append(out, st.Protect...)
			if !v.DependenciesMayChange {
				out = append(out, st.Pins...)
			}
		}
	}
	out = append(out, v.Protect...)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestResultsFor returns how to read structured results for criterion c: the first
// Results entry of c's stack whose conditions hold in the workspace. Only a stack's
// unit-test criterion has one; ok is false for anything else, or when no entry applies.
func (r Rules) TestResultsFor(c Criterion, facts WorkspaceFacts) (TestResults, bool) {
	if c.Stack == "" || c.Activity != "unit-test" {
		return TestResults{}, false
	}
	for _, st := range r.Stacks {
		if st.Name != c.Stack {
			continue
		}
		for _, tr := range st.Results {
			if ok, _ := facts.all(tr.When); ok {
				return tr, true
			}
		}
	}
	return TestResults{}, false
}

// PinsFor lists the dependency pins (Stack.Pins) of the stacks v's workspace matched,
// sorted, without repeats, whether or not v lets them change: the files whose changes
// the judge reports as dependencies (runner/judge.ChangedDependencies) when they may.
func (r Rules) PinsFor(v Verification) []string {
	var out []string
	for _, st := range r.Stacks {
		if slices.Contains(v.Stacks, st.Name) {
			out = append(out, st.Pins...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// InstallFor returns how the judge installs the dependencies of a task with
// verification v whose candidate workspace has facts: for each stack the workspace
// matched (v.Stacks), in the rules' order, the first Install entry whose conditions
// hold. It is empty unless v.DependenciesMayChange: with the pins protected the
// judge's dependency trees are the base's and nothing needs installing.
func (r Rules) InstallFor(v Verification, facts WorkspaceFacts) []InstallCommand {
	if !v.DependenciesMayChange {
		return nil
	}
	var out []InstallCommand
	for _, st := range r.Stacks {
		if !slices.Contains(v.Stacks, st.Name) {
			continue
		}
		for _, in := range st.Install {
			if ok, _ := facts.all(in.When); ok {
				out = append(out, in)
				break
			}
		}
	}
	return out
}
