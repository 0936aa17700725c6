package template

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

// TestStepFormHasEveryContractInput: the editor shows an input, named as Validate
// names the field, for every input the contract declares (contract.CompletionFormFields,
// VerificationFormFields and ReviewFormFields cover every field of Completion,
// Verification and Review but those the verification leaves out; the contract
// package's tests hold them to that), each row's inputs included, and shows back what
// was typed in it.
func TestStepFormHasEveryContractInput(t *testing.T) {
	fields := append(slices.Clone(contract.CompletionFormFields()), contract.ReviewFormFields()...)
	fields = append(fields, contract.VerificationFormFields()...)
	typed := map[string]string{}
	verification := contract.FormData{Values: typed, Rows: map[string][]contract.FormRow{}}
	var want []contract.FormField // the inputs, a row's named as in row 0
	for _, f := range fields {
		if f.Kind != contract.FormRows {
			typed[f.Name] = "typed-" + f.Key
			want = append(want, f)
			continue
		}
		row := contract.FormRow{}
		for _, r := range f.Row {
			row[r.Name] = "typed-" + f.Key + "-" + r.Key
			r.Name, r.Key = f.RowName(0, r), f.Key+"-"+r.Key
			want = append(want, r)
		}
		verification.Rows[f.Name] = []contract.FormRow{row}
	}
	v := View{CanEdit: true, Form: Form{Name: "t", Steps: []StepForm{{Role: "dev", Completion: typed, Review: typed, Verification: verification}}}}
	var b strings.Builder
	if err := Page(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	body := b.String()
	for _, f := range want {
		name := StepField(0, f.Name)
		if !strings.Contains(body, `name="`+name+`"`) || !strings.Contains(body, `data-testid="`+name+`"`) {
			t.Errorf("no input %s (%s)", name, f.Kind)
		}
		if f.Kind != contract.FormSelect && f.Kind != contract.FormCheckbox && !strings.Contains(body, "typed-"+f.Key) {
			t.Errorf("%s does not show its value", name)
		}
	}
	for _, id := range []string{"criterion-0-0", "criterion-0-1", "op-remove-criterion-0-0", "held-out-0-1", "op-remove-held-out-0-0", "held-out-hint-0", "judge-0"} {
		if !strings.Contains(body, `data-testid="`+id+`"`) {
			t.Errorf("no %s", id)
		}
	}
	if strings.Contains(body, "op-remove-criterion-0-1") {
		t.Error("the empty row to add a criterion has a Remove button")
	}
}
