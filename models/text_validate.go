package models

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TextProblem says why s cannot be stored as text, or "" when it can. Every database
// the product runs on must hold the same thing, and PostgreSQL refuses a NUL in text
// (SQLite would keep it, and bytes that are not UTF-8, which PostgreSQL also
// refuses): so text is valid UTF-8 without NUL, wherever it comes from.
func TextProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8 text"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain a NUL byte"
	}
	return ""
}

// CheckText walks v (a struct, pointer, slice, map or string, as decoded from YAML
// or JSON) and returns an EINVALID error naming the first string that TextProblem
// refuses, by its JSON path ("steps[2].contract.completion.path"; a map key that is
// not text names its map); nil when every string can be stored. It is for values
// decoded by something other than handlers.DecodeJSON, which checks the raw JSON.
func CheckText(v any) error {
	if field, msg := textIn(reflect.ValueOf(v), ""); msg != "" {
		if field == "" {
			field = "body"
		}
		return &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{field: msg}}
	}
	return nil
}

// textIn is CheckText's walk below path.
func textIn(v reflect.Value, path string) (string, string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", ""
		}
		return textIn(v.Elem(), path)
	case reflect.String:
		return path, TextProblem(v.String())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return "", "" // bytes, not text
		}
		for i := range v.Len() {
			if f, m := textIn(v.Index(i), path+"["+strconv.Itoa(i)+"]"); m != "" {
				return f, m
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			if k.Kind() == reflect.String {
				if m := TextProblem(k.String()); m != "" {
					return path, m
				}
			}
			if f, m := textIn(v.MapIndex(k), join(path, k.String())); m != "" {
				return f, m
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			sub := path
			if !sf.Anonymous || name != "" {
				if name == "" {
					name = strings.ToLower(sf.Name)
				}
				sub = join(path, name)
			}
			if f, m := textIn(v.Field(i), sub); m != "" {
				return f, m
			}
		}
	}
	return "", ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
