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

// The op list in doc.go ("# Ops") names every op method of Context, and
// nothing that is not one: a new op that the list forgets, or a list entry
// that names no method, fails here. In-place variants (…InPlace) are
// covered by the list's sentence about them.
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

	tensor := reflect.TypeFor[*ggml.Tensor]()
	ct := reflect.TypeFor[*ggml.Context]()
	var missing []string
	methods := map[string]bool{}
	for i := range ct.NumMethod() {
		m := ct.Method(i)
		if m.Type.NumOut() != 1 || m.Type.Out(0) != tensor || m.Name == "NewTensor" || m.Name == "Tensor" {
			continue
		}
		methods[m.Name] = true
		if strings.HasSuffix(m.Name, "InPlace") {
			continue
		}
		if !named[m.Name] {
			missing = append(missing, m.Name)
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "ops of Context that doc.go's Ops section does not name")

	// Every name in the list that looks like an op is one.
	var stray []string
	for w := range named {
		if _, isMethod := ct.MethodByName(w); isMethod && !methods[w] {
			stray = append(stray, w) // a method, but not an op
		}
	}
	slices.Sort(stray)
	assert.Empty(t, stray, "names in the Ops section that are Context methods but not ops")
}
