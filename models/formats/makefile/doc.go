// Package makefile is the one Makefile reader: it reads a Makefile as GNU make reads
// it, for the workspace detection of the contract code (models/contract) and for
// the judge (runner/judge/fileparts), which protects parts of a Makefile;
// models/formats/onehome_test.go forbids a second one.
//
// The file is read line by line: logical lines joined at an odd number of trailing
// backslashes, CR before LF dropped, comments cut at an unescaped '#' outside
// $(...); a line starting with the recipe prefix (TAB, or what .RECIPEPREFIX sets)
// is a recipe line when a rule context is open; variable assignments (with
// export/override/private/define/undefine), conditionals,
// export/unexport/vpath/include/load directives, rules (':', '::', '&:', static
// patterns, target-specific variables after the colon) and anything else.
//
// Conditionals are not evaluated: any branch may be the live one. A line inside a
// conditional may be skipped, and a skipped line does not end the rule context
// (GNU make ignores everything in a false branch), so after one the recipe lines
// that follow may belong to the rule before it as well as to what the line starts.
// A recipe line is attributed to every rule that may own it.
//
// Variables are expanded with every value the file assigns them (Words,
// Alternatives); what a function, a computed name or a self reference makes
// unknowable is reported as unknown, never guessed.
package makefile
