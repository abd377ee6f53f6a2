package chat

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// kind is the type of a template value, one per runtime value class of
// @huggingface/jinja.
type kind uint8

const (
	kUndef kind = iota
	kNull
	kBool
	kInt
	kFloat
	kStr
	kArr
	kTuple
	kObj
	kKwargs
	kNS
	kFunc
)

var kindNames = [...]string{
	kUndef: "UndefinedValue", kNull: "NullValue", kBool: "BooleanValue", kInt: "IntegerValue",
	kFloat: "FloatValue", kStr: "StringValue", kArr: "ArrayValue", kTuple: "TupleValue",
	kObj: "ObjectValue", kKwargs: "KeywordArgumentsValue", kNS: "NamespaceValue", kFunc: "FunctionValue",
}

func (k kind) String() string { return kindNames[k] }

// val is a template value. Numbers are float64, as in JavaScript; arrays,
// objects and functions are pointers, compared by identity.
type val struct {
	k kind
	b bool
	n float64
	s string
	a *array
	o *object
	f *function
}

type array struct{ items []val }

// object is a map that keeps insertion order (JavaScript's Map).
type object struct {
	keys []string
	m    map[string]val
}

type function struct {
	name string
	call func(in *interp, args []val, e *env) (val, error)
}

var (
	undef = val{k: kUndef}
	null  = val{k: kNull}
)

func boolVal(b bool) val     { return val{k: kBool, b: b} }
func intVal(n float64) val   { return val{k: kInt, n: n} }
func floatVal(n float64) val { return val{k: kFloat, n: n} }
func strVal(s string) val    { return val{k: kStr, s: s} }
func arrVal(items []val) val { return val{k: kArr, a: &array{items}} }
func fnVal(name string, call func(in *interp, args []val, e *env) (val, error)) val {
	return val{k: kFunc, f: &function{name, call}}
}

func newObject() *object { return &object{m: map[string]val{}} }

func (o *object) get(k string) (val, bool) { v, ok := o.m[k]; return v, ok }

func (o *object) set(k string, v val) {
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.m[k] = v
}

func objVal(o *object) val { return val{k: kObj, o: o} }

func (v val) isArr() bool { return v.k == kArr || v.k == kTuple }
func (v val) isObj() bool { return v.k == kObj || v.k == kKwargs }

// attrContainer reports an object or a namespace.
func (v val) attrContainer() bool { return v.isObj() || v.k == kNS }

func (v val) isNum() bool { return v.k == kInt || v.k == kFloat }

// truth is JavaScript's !!value of the runtime value, with the overrides of
// objects and arrays (true when not empty).
func (v val) truth() bool {
	switch v.k {
	case kBool:
		return v.b
	case kInt, kFloat:
		return v.n != 0 && !math.IsNaN(v.n)
	case kStr:
		return v.s != ""
	case kArr, kTuple:
		return len(v.a.items) > 0
	case kObj, kKwargs:
		return len(v.o.keys) > 0
	case kNS, kFunc:
		return true
	}
	return false
}

// str is the text of v as the output of {{ v }} (toString of the runtime
// value).
func (v val) str() string {
	switch v.k {
	case kFloat:
		if v.n == 0 && math.Signbit(v.n) {
			return "-0.0"
		}
		if v.n == math.Trunc(v.n) && !math.IsInf(v.n, 0) {
			return strconv.FormatFloat(v.n, 'f', 1, 64)
		}
		return jsNumber(v.n)
	case kArr, kTuple, kObj, kKwargs, kNS:
		s, err := toJSON(v, jsonOpts{}, 0, false)
		if err != nil {
			return ""
		}
		return s
	}
	return v.raw()
}

// raw is String(value.value) in JavaScript: what ~ and + concatenate.
func (v val) raw() string {
	switch v.k {
	case kUndef:
		return "undefined"
	case kNull:
		return "null"
	case kBool:
		if v.b {
			return "true"
		}
		return "false"
	case kInt, kFloat:
		return jsNumber(v.n)
	case kStr:
		return v.s
	case kArr, kTuple:
		parts := make([]string, len(v.a.items))
		for i, x := range v.a.items {
			parts[i] = x.str()
		}
		return strings.Join(parts, ",")
	case kObj, kKwargs, kNS:
		return "[object Map]"
	case kFunc:
		return "function " + v.f.name + "() { [native code] }"
	}
	return ""
}

// jsNumber formats n as JavaScript's String(n).
func jsNumber(n float64) string {
	switch {
	case math.IsNaN(n):
		return "NaN"
	case math.IsInf(n, 1):
		return "Infinity"
	case math.IsInf(n, -1):
		return "-Infinity"
	case n == 0:
		return "0"
	}
	a := math.Abs(n)
	if a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	s := strconv.FormatFloat(n, 'e', -1, 64) // 1e+21, 1.5e-07
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// looseEqual is JavaScript's == on the values of a and b.
func looseEqual(a, b val) bool {
	nullish := func(v val) bool { return v.k == kUndef || v.k == kNull }
	if nullish(a) || nullish(b) {
		return nullish(a) && nullish(b)
	}
	switch {
	case a.k == kStr && b.k == kStr:
		return a.s == b.s
	case a.k == kBool && b.k == kBool:
		return a.b == b.b
	case a.isArr() && b.isArr():
		return a.a == b.a
	case a.attrContainer() && b.attrContainer():
		return a.o == b.o
	case a.k == kFunc && b.k == kFunc:
		return a.f == b.f
	}
	an, aok := jsToNumber(a)
	bn, bok := jsToNumber(b)
	return aok && bok && an == bn
}

// strictEqual is JavaScript's === on the values of a and b.
func strictEqual(a, b val) bool {
	switch {
	case a.k == kUndef || b.k == kUndef || a.k == kNull || b.k == kNull:
		return a.k == b.k
	case a.isNum() && b.isNum():
		return a.n == b.n
	case a.k != b.k && !(a.isArr() && b.isArr()) && !(a.isObj() && b.isObj()):
		return false
	}
	return looseEqual(a, b)
}

// jsToNumber converts a primitive to a number as == does; false for
// arrays, objects and functions.
func jsToNumber(v val) (float64, bool) {
	switch v.k {
	case kInt, kFloat:
		return v.n, true
	case kBool:
		if v.b {
			return 1, true
		}
		return 0, true
	case kStr:
		s := trimJS(v.s)
		if s == "" {
			return 0, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || strings.ContainsAny(s, "_xXpP") || strings.EqualFold(strings.TrimLeft(s, "+-"), "inf") {
			return math.NaN(), true
		}
		return f, true
	}
	return 0, false
}

// isJSSpace reports JavaScript's \s.
func isJSSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func trimJS(s string) string      { return strings.TrimFunc(s, isJSSpace) }
func trimLeftJS(s string) string  { return strings.TrimLeftFunc(s, isJSSpace) }
func trimRightJS(s string) string { return strings.TrimRightFunc(s, isJSSpace) }

// utf16Len is JavaScript's string length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// titleCase upper-cases each ASCII word character that starts a word, as
// value.replace(/\b\w/g, c => c.toUpperCase()).
func titleCase(s string) string {
	b := []byte(s)
	for i := range b {
		if isWordByte(b[i]) && (i == 0 || !isWordByte(b[i-1])) && 'a' <= b[i] && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// capitalize upper-cases the first character and keeps the rest.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[n:]
}

// jsonOpts are tojson's options.
type jsonOpts struct {
	indent      int
	ensureASCII bool
	separators  *[2]string
	sortKeys    bool
}

// toJSON writes v as @huggingface/jinja's toJSON.
func toJSON(v val, o jsonOpts, depth int, undefToNull bool) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("%w: tojson nested deeper than %d", ErrLimit, maxDepth)
	}
	item, key := ", ", ": "
	if o.separators != nil {
		item, key = o.separators[0], o.separators[1]
	} else if o.indent > 0 {
		item = ","
	}
	switch v.k {
	case kNull:
		return "null", nil
	case kUndef:
		if undefToNull {
			return "null", nil
		}
		return "undefined", nil
	case kInt, kFloat:
		if math.IsNaN(v.n) || math.IsInf(v.n, 0) {
			return "null", nil
		}
		return jsNumber(v.n), nil
	case kBool:
		return v.raw(), nil
	case kStr:
		return jsonString(v.s, o.ensureASCII), nil
	case kArr, kObj, kNS: // not tuples nor keyword arguments, as the reference
		pad := ""
		if o.indent > 0 {
			pad = strings.Repeat(" ", o.indent)
		}
		base := "\n" + strings.Repeat(pad, depth)
		child := base + pad
		var parts []string
		if v.k == kArr {
			for _, x := range v.a.items {
				s, err := toJSON(x, o, depth+1, undefToNull)
				if err != nil {
					return "", err
				}
				parts = append(parts, s)
			}
			if o.indent > 0 && len(parts) > 0 {
				return "[" + child + strings.Join(parts, item+child) + base + "]", nil
			}
			return "[" + strings.Join(parts, item) + "]", nil
		}
		keys := v.o.keys
		if o.sortKeys {
			keys = slices.Clone(keys)
			slices.Sort(keys)
		}
		for _, k := range keys {
			s, err := toJSON(v.o.m[k], o, depth+1, undefToNull)
			if err != nil {
				return "", err
			}
			e := jsonString(k, o.ensureASCII) + key + s
			if o.indent > 0 {
				e = child + e
			}
			parts = append(parts, e)
		}
		if o.indent > 0 && len(parts) > 0 {
			return "{" + strings.Join(parts, item) + base + "}", nil
		}
		return "{" + strings.Join(parts, item) + "}", nil
	}
	return "", fmt.Errorf("cannot convert to JSON: %v", v.k)
}

// jsonString is JSON.stringify of a string, and with ensureASCII every
// UTF-16 unit from 0x7f up escaped.
func jsonString(s string, ensureASCII bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ensureASCII && r >= 0x7f:
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// fromGo converts a Go value to a template value as the JavaScript
// renderer converts JSON: integral numbers are integers, maps are objects
// (with keys that look like array indices first, then the others sorted,
// the order of a JSON object from encoding/json in JavaScript).
func fromGo(x any, depth int) (val, error) {
	if depth > maxDepth {
		return val{}, fmt.Errorf("%w: variables nested deeper than %d", ErrLimit, maxDepth)
	}
	switch x := x.(type) {
	case nil:
		return null, nil
	case val:
		return x, nil
	case string:
		return strVal(x), nil
	case bool:
		return boolVal(x), nil
	case Message:
		o := newObject()
		o.set("role", strVal(x.Role))
		o.set("content", strVal(x.Content))
		return objVal(o), nil
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intVal(float64(rv.Int())), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return intVal(float64(rv.Uint())), nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			return intVal(f), nil
		}
		return floatVal(f), nil
	case reflect.String:
		return strVal(rv.String()), nil
	case reflect.Bool:
		return boolVal(rv.Bool()), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return null, nil
		}
		return fromGo(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return null, nil
		}
		items := make([]val, rv.Len())
		for i := range items {
			v, err := fromGo(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return val{}, err
			}
			items[i] = v
		}
		return arrVal(items), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return val{}, fmt.Errorf("%w: a map with %v keys as a variable (want string keys)", ErrTemplate, rv.Type().Key())
		}
		if rv.IsNil() {
			return null, nil
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sortJSKeys(keys)
		o := newObject()
		for _, k := range keys {
			v, err := fromGo(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface(), depth+1)
			if err != nil {
				return val{}, err
			}
			o.set(k, v)
		}
		return objVal(o), nil
	}
	return val{}, fmt.Errorf("%w: cannot use a %T as a variable", ErrTemplate, x)
}

// sortJSKeys sorts keys as the property order of a JavaScript object made
// from sorted JSON: array indices ascending first, then the rest sorted.
func sortJSKeys(keys []string) {
	index := func(k string) (uint64, bool) {
		if k == "" || len(k) > 1 && k[0] == '0' {
			return 0, false
		}
		n, err := strconv.ParseUint(k, 10, 32)
		return n, err == nil && n < 1<<32-1
	}
	slices.SortFunc(keys, func(a, b string) int {
		na, ia := index(a)
		nb, ib := index(b)
		switch {
		case ia && ib:
			return int(int64(na) - int64(nb))
		case ia:
			return -1
		case ib:
			return 1
		}
		return strings.Compare(a, b)
	})
}
