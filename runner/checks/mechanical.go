package checks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// Mechanical checks the completion contract against the file the worker left behind.
//
//   - file: the file at resolvedPath exists, is not empty (whitespace only counts as
//     empty) and has at least c.MinLength bytes.
//   - signal: the file at resolvedPath is a JSON object whose "signal" field is the
//     string c.Signal, exactly.
//   - none: passes; a clean exit (Process) is all the contract asks.
//
// An empty type is inferred by the contract's own rule (contract.Completion.Normalized:
// file when the contract names a path, none otherwise); the runner passes the
// normalised contract, so this serves a caller holding a raw one.
// resolvedPath is the absolute path the caller resolved and confined to the task
// workspace; diagnoses name c.Path (what the worker was told), never resolvedPath
// unless the contract names no path.
// readFile defaults to os.ReadFile. A contract the check cannot apply (unknown type,
// signal without a value, no resolved path) or a read error other than missing,
// directory or permission is Verdict error: not the worker's fault.
func Mechanical(c contract.Completion, resolvedPath string, readFile func(string) ([]byte, error)) models.CheckResult {
	start := time.Now()
	if readFile == nil {
		readFile = os.ReadFile
	}
	typ := c.Type
	if typ == "" {
		typ = c.Normalized().Type // the contract's rule, for a caller with a raw contract
	}
	switch typ {
	case contract.CompletionNone:
		return result(models.StageMechanical, models.VerdictPass, "", start)
	case contract.CompletionFile, contract.CompletionSignal:
	default:
		return result(models.StageMechanical, models.VerdictError,
			fmt.Sprintf("unknown completion type %q in the contract", typ), start)
	}
	if typ == contract.CompletionSignal && c.Signal == "" {
		return result(models.StageMechanical, models.VerdictError,
			"the contract has completion type signal but names no signal value", start)
	}
	if resolvedPath == "" {
		return result(models.StageMechanical, models.VerdictError,
			"no output path was resolved for the completion contract", start)
	}

	where := describePath(c.Path, resolvedPath)
	what := "output file"
	if typ == contract.CompletionSignal {
		what = "signal file"
	}
	data, err := readFile(resolvedPath)
	if err != nil {
		verdict, diag := readFailure(what, where, err)
		if typ == contract.CompletionSignal && verdict == models.VerdictFail {
			diag += fmt.Sprintf(`; write a JSON object such as {"signal": %q} there`, c.Signal)
		}
		return result(models.StageMechanical, verdict, diag, start)
	}

	if typ == contract.CompletionFile {
		if len(bytes.TrimSpace(data)) == 0 {
			diag := fmt.Sprintf("%s %s is empty", what, where)
			if len(data) > 0 {
				diag = fmt.Sprintf("%s %s contains only whitespace (%d bytes)", what, where, len(data))
			}
			if c.MinLength > 0 {
				diag += fmt.Sprintf("; the contract requires at least %d bytes", c.MinLength)
			}
			return result(models.StageMechanical, models.VerdictFail, diag, start)
		}
		if len(data) < c.MinLength {
			return result(models.StageMechanical, models.VerdictFail, fmt.Sprintf(
				"%s %s is %d bytes long; the contract requires at least %d bytes",
				what, where, len(data), c.MinLength), start)
		}
		return result(models.StageMechanical, models.VerdictPass, "", start)
	}

	verdict, diag := checkSignal(data, c.Signal, where)
	return result(models.StageMechanical, verdict, diag, start)
}

// describePath names a completion path for a diagnosis: the contract's path, relative
// to the workspace, as the worker was told it; the absolute path it resolved to only
// when the contract names none. The server's layout is nobody's business: the worker
// runs in the workspace, and people read diagnoses on the dashboard.
func describePath(rel, abs string) string {
	if rel = strings.TrimSpace(rel); rel != "" {
		return rel
	}
	return abs
}

// readFailure classifies an error reading the completion file: missing, a directory
// or unreadable are the worker's to fix; anything else is an infrastructure error.
func readFailure(what, where string, err error) (string, string) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return models.VerdictFail, fmt.Sprintf("%s missing at %s", what, where)
	case errors.Is(err, syscall.EISDIR):
		return models.VerdictFail, fmt.Sprintf("%s %s is a directory, not a file", what, where)
	case errors.Is(err, fs.ErrPermission):
		return models.VerdictFail, fmt.Sprintf("%s %s cannot be read (permission denied)", what, where)
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EXDEV):
		// The path became a symbolic link (or led out of the workspace) after it was
		// resolved: the worker's doing, and never followed.
		return models.VerdictFail, fmt.Sprintf("%s %s is a symbolic link or leads out of the workspace; write a regular file there", what, where)
	}
	return models.VerdictError, fmt.Sprintf("reading %s %s: %v", what, where, err)
}

// checkSignal applies the signal contract to the file's bytes.
func checkSignal(data []byte, want, where string) (string, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case len(bytes.TrimSpace(data)) == 0:
			return models.VerdictFail, fmt.Sprintf(`signal file %s is empty; it must hold a JSON object such as {"signal": %q}`, where, want)
		case errors.As(err, &syn):
			return models.VerdictFail, fmt.Sprintf("signal file %s is not valid JSON: %v at offset %d", where, syn, syn.Offset)
		case errors.As(err, &typ):
			return models.VerdictFail, fmt.Sprintf(`signal file %s holds a JSON %s; it must hold a JSON object such as {"signal": %q}`, where, typ.Value, want)
		}
		return models.VerdictFail, fmt.Sprintf("signal file %s is not valid JSON: %v", where, err)
	}
	if obj == nil { // the file is the literal null
		return models.VerdictFail, fmt.Sprintf(`signal file %s holds null; it must hold a JSON object such as {"signal": %q}`, where, want)
	}
	raw, ok := obj["signal"]
	if !ok {
		return models.VerdictFail, fmt.Sprintf(`signal file %s has no "signal" field; %q required`, where, want)
	}
	var got string
	if err := json.Unmarshal(raw, &got); err != nil {
		return models.VerdictFail, fmt.Sprintf(`"signal" field in %s is %s, not a string; %q required`, where, quoteLine(string(raw), 80), want)
	}
	if got != want {
		return models.VerdictFail, fmt.Sprintf(`signal %q but %q required (in %s)`, got, want, where)
	}
	return models.VerdictPass, ""
}
