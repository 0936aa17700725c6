package pages

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// formLeavesOut are the contract fields the template editor does not show, by type
// and field: generation writes them (generated_from, generated_at, workspace,
// stacks, a criterion's stack and tools), a redacted contract counts its hidden
// held-out tests (shown read-only, not read back), and a step's budget is set
// elsewhere. Every other field of a step's contract goes through the form.
var formLeavesOut = map[string]bool{
	"Verification.GeneratedFrom": true, "Verification.GeneratedAt": true, "Verification.Workspace": true,
	"Verification.Stacks": true, "Verification.HeldOutCount": true,
	"Criterion.Stack": true, "Criterion.Tools": true,
}

// fillForm sets every field of v (a pointer's element) that the form carries to a
// value other than its zero, so that a field the form drops shows as a difference.
func fillForm(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strings.Repeat("x", *n))
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(*n) * int64(time.Second))
		} else {
			v.SetInt(int64(*n))
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillForm(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillForm(t, v.Index(0), n)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() && !formLeavesOut[v.Type().Name()+"."+f.Name] {
				fillForm(t, v.Field(i), n)
			}
		}
	default:
		t.Fatalf("fillForm: no value for a %s", v.Type())
	}
}

// TestTemplateFormCarriesEveryContractField: a step whose contract has every field
// set (but those formLeavesOut names) reads back equal from the editor's form, so a
// field added to the contract and not to the form fails here.
func TestTemplateFormCarriesEveryContractField(t *testing.T) {
	st := models.Step{Name: "a", Role: "dev", Brief: "b"}
	n := 0
	for _, part := range []any{&st.Completion, &st.Verification} {
		fillForm(t, reflect.ValueOf(part).Elem(), &n)
	}
	st.Review = &contract.Review{}
	fillForm(t, reflect.ValueOf(st.Review).Elem(), &n)
	back, fe := templateFromForm(formFromTemplate(&models.Template{Name: "t", Steps: []models.Step{st}}))
	if len(fe) > 0 {
		t.Fatalf("form errors %v", fe)
	}
	if got := back.Steps[0]; !reflect.DeepEqual(got.Contract(), st.Contract()) {
		t.Fatalf("the form lost a field:\ngot  %+v\nwant %+v", got.Contract(), st.Contract())
	}
}
