package errorpage

import (
	"strconv"
	"strings"
)

func statusText(n int) string { return strconv.Itoa(n) }

func join(s []string) string { return strings.Join(s, ", ") }

// Heading returns a short human heading for an HTTP status.
func Heading(status int) string {
	switch status {
	case 400:
		return "That request could not be read"
	case 401:
		return "Please sign in"
	case 403:
		return "Not allowed"
	case 404:
		return "Not found"
	case 409:
		return "Not possible right now"
	case 422:
		return "Some fields need fixing"
	case 429:
		return "Too many requests"
	}
	if status >= 500 {
		return "Something went wrong on our side"
	}
	return "Error"
}
