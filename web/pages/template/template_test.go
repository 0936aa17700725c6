package template

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

// TestStepFormHasEveryContractInput: the editor shows an input, named as Validate
// names the field, for every input the contract declares (contract.CompletionFormFields
// and ReviewFormFields cover every field of Completion and Review; the contract
// package's tests hold them to that), and shows back what was typed in it.
func TestStepFormHasEveryContractInput(t *testing.T) {
	fields := append(slices.Clone(contract.CompletionFormFields()), contract.ReviewFormFields()...)
	typed := map[string]string{}
	for _, f := range fields {
		typed[f.Name] = "typed-" + f.Key
	}
	v := View{CanEdit: true, Form: Form{Name: "t", Steps: []StepForm{{Role: "dev", Completion: typed, Review: typed}}}}
	var b strings.Builder
	if err := Page(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	body := b.String()
	for _, f := range fields {
		name := StepField(0, f.Name)
		if !strings.Contains(body, `name="`+name+`"`) || !strings.Contains(body, `data-testid="`+name+`"`) {
			t.Errorf("no input %s (%s)", name, f.Kind)
		}
		if f.Kind != contract.FormSelect && f.Kind != contract.FormCheckbox && !strings.Contains(body, "typed-"+f.Key) {
			t.Errorf("%s does not show its value", name)
		}
	}
}
