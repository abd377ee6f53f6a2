package ggml_test

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// The op list in doc.go ("# Ops") names every op of the op table (every op
// method of Context), and nothing that is not one: a new op that the list
// forgets, or a list entry that names no op, fails here. In-place variants
// (…InPlace) are covered by the list's sentence about them.
func TestDocListsEveryOp(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	doc := string(src)
	start := strings.Index(doc, "// # Ops")
	end := strings.Index(doc, "// # Left out")
	require.True(t, start >= 0 && end > start, "doc.go has an Ops section before Left out")
	section := doc[start:end]
	// Ranges such as View1D..View4D and MapCustom1..3.
	rangeRe := regexp.MustCompile(`\b([A-Z][A-Za-z]*)(\d)([A-Za-z]*)\.\.(?:[A-Z][A-Za-z]*)?(\d)[A-Za-z]*`)
	section = rangeRe.ReplaceAllStringFunc(section, func(m string) string {
		sub := rangeRe.FindStringSubmatch(m)
		var names []string
		for d := sub[2][0]; d <= sub[4][0]; d++ {
			names = append(names, sub[1]+string(d)+sub[3])
		}
		return strings.Join(names, " ")
	})
	named := map[string]bool{}
	for _, w := range regexp.MustCompile(`\b[A-Z][A-Za-z0-9]+\b`).FindAllString(section, -1) {
		named[w] = true
	}

	ops := map[string]bool{}
	for _, o := range opTable { // every op of Context (TestOpTable)
		ops[o.name] = true
	}
	var missing []string
	for op := range ops {
		if !strings.HasSuffix(op, "InPlace") && !named[op] {
			missing = append(missing, op)
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "ops of Context that doc.go's Ops section does not name")

	// Every name in the list that looks like an op is one.
	ct := reflect.TypeFor[*ggml.Context]()
	var stray []string
	for w := range named {
		if _, isMethod := ct.MethodByName(w); isMethod && !ops[w] {
			stray = append(stray, w) // a method, but not an op
		}
	}
	slices.Sort(stray)
	assert.Empty(t, stray, "names in the Ops section that are Context methods but not ops")
}
