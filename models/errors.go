package models

import (
	"errors"
	"fmt"

	"github.com/countersign/countersign/models/contract"
)

// The domain error and its codes are declared in models/contract, which the contract's
// codec and validation use and which must not import models; these names keep them
// where the rest of the code has always found them. Unlike the other names that moved
// to models/contract (whose callers now name contract directly), these aliases stay for
// good: the domain error belongs to the root package, the vocabulary every layer
// answers in, and lives in models/contract only because that package cannot import
// models.
const (
	EBADREQUEST   = contract.EBADREQUEST
	EINVALID      = contract.EINVALID
	ENOTFOUND     = contract.ENOTFOUND
	ECONFLICT     = contract.ECONFLICT
	EFORBIDDEN    = contract.EFORBIDDEN
	EUNAUTHORIZED = contract.EUNAUTHORIZED
	ETOOLARGE     = contract.ETOOLARGE
	EINTERNAL     = contract.EINTERNAL
)

// Error is the domain error (contract.Error): Code decides the HTTP status, Message
// is safe to show to the caller.
type Error = contract.Error

// FieldErrors collects field-level validation messages (contract.FieldErrors).
type FieldErrors = contract.FieldErrors

// Errorf returns an *Error with the given code and a formatted, caller-safe message.
func Errorf(code, format string, args ...any) *Error {
	return contract.Errorf(code, format, args...)
}

// Forbidden returns an EFORBIDDEN error naming the rule that refused the action.
func Forbidden(rule, format string, args ...any) *Error {
	return &Error{Code: EFORBIDDEN, Rule: rule, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns an ENOTFOUND error for a kind of thing and its key.
func NotFound(kind string, key any) *Error {
	return &Error{Code: ENOTFOUND, Message: fmt.Sprintf("%s %v not found", kind, key)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for any
// other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err: the *Error's message, or a
// generic text for internal errors so that nothing internal leaks.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if err == nil {
		return ""
	}
	return "internal error"
}
