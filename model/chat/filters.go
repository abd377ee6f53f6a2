package chat

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// stringMethod is the property name of a string: a method, or length.
func stringMethod(in *interp, s, name string) val {
	noArgs := func(f func(string) string) val {
		return fnVal(name, func(in *interp, _ []val, _ *env) (val, error) { return in.newString(f(s)) })
	}
	switch name {
	case "upper":
		return noArgs(strings.ToUpper)
	case "lower":
		return noArgs(strings.ToLower)
	case "strip":
		return noArgs(trimJS)
	case "title":
		return noArgs(titleCase)
	case "capitalize":
		return noArgs(capitalize)
	case "length":
		return intVal(float64(utf16Len(s)))
	case "rstrip":
		return noArgs(trimRightJS)
	case "lstrip":
		return noArgs(trimLeftJS)
	case "startswith", "endswith":
		has := strings.HasPrefix
		if name == "endswith" {
			has = strings.HasSuffix
		}
		return fnVal(name, func(_ *interp, args []val, _ *env) (val, error) {
			if len(args) == 0 {
				return val{}, errors.New(name + "() requires at least one argument")
			}
			switch p := args[0]; {
			case p.k == kStr:
				return boolVal(has(s, p.s)), nil
			case p.isArr():
				for _, x := range p.a.items {
					if x.k != kStr {
						return val{}, errors.New(name + "() tuple elements must be strings")
					}
					if has(s, x.s) {
						return boolVal(true), nil
					}
				}
				return boolVal(false), nil
			}
			return val{}, errors.New(name + "() argument must be a string or tuple of strings")
		})
	case "split":
		return fnVal(name, func(in *interp, args []val, _ *env) (val, error) {
			sep, maxsplit := null, intVal(-1)
			if len(args) > 0 {
				sep = args[0]
			}
			if len(args) > 1 {
				maxsplit = args[1]
			}
			if sep.k != kStr && sep.k != kNull {
				return val{}, errors.New("sep argument must be a string or null")
			}
			if maxsplit.k != kInt {
				return val{}, errors.New("maxsplit argument must be a number")
			}
			max := int(maxsplit.n)
			var parts []string
			if sep.k == kNull {
				text := trimLeftJS(s)
				for text != "" {
					end := strings.IndexFunc(text, isJSSpace)
					if end < 0 {
						end = len(text)
					}
					if max != -1 && len(parts) >= max {
						parts = append(parts, text)
						break
					}
					parts = append(parts, text[:end])
					text = trimLeftJS(text[end:])
				}
			} else {
				if sep.s == "" {
					return val{}, errors.New("empty separator")
				}
				parts = strings.Split(s, sep.s)
				if max != -1 && len(parts) > max {
					parts = append(parts[:max:max], strings.Join(parts[max:], sep.s))
				}
			}
			if err := in.step(int64(len(parts))); err != nil {
				return val{}, err
			}
			items := make([]val, len(parts))
			for i, p := range parts {
				items[i] = strVal(p)
			}
			return arrVal(items), nil
		})
	case "replace":
		return fnVal(name, func(in *interp, args []val, _ *env) (val, error) {
			if len(args) < 2 {
				return val{}, errors.New("replace() requires at least two arguments")
			}
			old, repl := args[0], args[1]
			if old.k != kStr || repl.k != kStr {
				return val{}, errors.New("replace() arguments must be strings")
			}
			count := null
			if len(args) > 2 {
				if args[2].k == kKwargs {
					if c, ok := args[2].o.get("count"); ok {
						count = c
					}
				} else {
					count = args[2]
				}
			}
			if count.k != kInt && count.k != kNull {
				return val{}, errors.New("replace() count argument must be a number or null")
			}
			n := -1
			if count.k == kInt && count.n >= 0 {
				n = int(math.Min(count.n, math.MaxInt32))
			}
			if count.k == kInt && count.n == 0 {
				return strVal(s), nil
			}
			return replace(in, s, old.s, repl.s, n)
		})
	}
	return undef
}

// replace replaces the first n (all if n < 0) matches of old in s; an empty
// old matches between every two code points and at both ends.
func replace(in *interp, s, old, repl string, n int) (val, error) {
	matches := 0
	if old == "" {
		matches = utf8.RuneCountInString(s) + 1
	} else {
		matches = strings.Count(s, old)
	}
	if n >= 0 {
		matches = min(matches, n)
	}
	if int64(len(s))+int64(matches)*int64(len(repl)) > MaxOutput {
		return val{}, fmt.Errorf("%w: a string of more than %d bytes", ErrLimit, MaxOutput)
	}
	return in.newString(strings.Replace(s, old, repl, matches))
}

// objectMethod is a method of an object: get, items, keys, values,
// dictsort.
func objectMethod(obj val, name string) val {
	o := obj.o
	switch name {
	case "get":
		return fnVal(name, func(_ *interp, args []val, _ *env) (val, error) {
			if len(args) == 0 || args[0].k != kStr {
				k := undef
				if len(args) > 0 {
					k = args[0]
				}
				return val{}, fmt.Errorf("object key must be a string: got %v", k.k)
			}
			if v, ok := o.get(args[0].s); ok {
				return v, nil
			}
			if len(args) > 1 {
				return args[1], nil
			}
			return null, nil
		})
	case "items":
		return fnVal(name, func(in *interp, _ []val, _ *env) (val, error) { return items(in, o) })
	case "keys":
		return fnVal(name, func(in *interp, _ []val, _ *env) (val, error) {
			if err := in.step(int64(len(o.keys))); err != nil {
				return val{}, err
			}
			out := make([]val, len(o.keys))
			for i, k := range o.keys {
				out[i] = strVal(k)
			}
			return arrVal(out), nil
		})
	case "values":
		return fnVal(name, func(in *interp, _ []val, _ *env) (val, error) {
			if err := in.step(int64(len(o.keys))); err != nil {
				return val{}, err
			}
			out := make([]val, len(o.keys))
			for i, k := range o.keys {
				out[i] = o.m[k]
			}
			return arrVal(out), nil
		})
	case "dictsort":
		return fnVal(name, func(in *interp, args []val, _ *env) (val, error) {
			kw := newObject()
			var pos []val
			for _, a := range args {
				if a.k == kKwargs {
					kw = a.o
				} else {
					pos = append(pos, a)
				}
			}
			arg := func(i int, name string, def val) val {
				if i < len(pos) {
					return pos[i]
				}
				if v, ok := kw.get(name); ok {
					return v
				}
				return def
			}
			cs := arg(0, "case_sensitive", boolVal(false))
			by := arg(1, "by", strVal("key"))
			rev := arg(2, "reverse", boolVal(false))
			if cs.k != kBool {
				return val{}, errors.New("case_sensitive must be a boolean")
			}
			if by.k != kStr || by.s != "key" && by.s != "value" {
				return val{}, errors.New("by must be either 'key' or 'value'")
			}
			if rev.k != kBool {
				return val{}, errors.New("reverse must be a boolean")
			}
			it, err := items(in, o)
			if err != nil {
				return val{}, err
			}
			j := boolInt(by.s == "value")
			err = sortVals(it.a.items, func(v val) val { return v.a.items[j] }, cs.b, rev.b)
			return it, err
		})
	}
	return undef
}

func items(in *interp, o *object) (val, error) {
	if err := in.step(int64(len(o.keys))); err != nil {
		return val{}, err
	}
	out := make([]val, len(o.keys))
	for i, k := range o.keys {
		out[i] = arrVal([]val{strVal(k), o.m[k]})
	}
	return arrVal(out), nil
}

// compare orders two values as the renderer's sort: numbers (and
// booleans) by value, strings by UTF-16 order, ignoring case unless
// caseSensitive; anything else is an error.
func compare(a, b val, caseSensitive bool) (int, error) {
	switch {
	case a.k == kNull && b.k == kNull, a.k == kUndef && b.k == kUndef:
		return 0, nil
	case a.k == kNull || b.k == kNull || a.k == kUndef || b.k == kUndef:
		return 0, fmt.Errorf("cannot compare %v with %v", a.k, b.k)
	}
	if x, ok := numLike(a); ok {
		if y, ok := numLike(b); ok {
			switch {
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
	}
	if a.k != b.k {
		return 0, fmt.Errorf("cannot compare different types: %v and %v", a.k, b.k)
	}
	if a.k != kStr {
		return 0, fmt.Errorf("cannot compare type: %v", a.k)
	}
	x, y := a.s, b.s
	if !caseSensitive {
		x, y = strings.ToLower(x), strings.ToLower(y)
	}
	return compareUTF16(x, y), nil
}

// compareUTF16 orders strings as JavaScript's < does.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ka, kb := utf16Key(ra), utf16Key(rb)
			if ka < kb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	return strings.Compare(a, b) // one is empty
}

func utf16Key(r rune) rune {
	if r >= 0x10000 {
		return 0xd800 + (r-0x10000)>>10
	}
	return r
}

// sortVals sorts vs stably by key(v).
func sortVals(vs []val, key func(val) val, caseSensitive, reverse bool) error {
	var err error
	slices.SortStableFunc(vs, func(a, b val) int {
		c, e := compare(key(a), key(b), caseSensitive)
		if e != nil && err == nil {
			err = e
		}
		if reverse {
			return -c
		}
		return c
	})
	return err
}

// attrPath reads a dotted attribute path of item, as sort and map do.
func attrPath(item val, path string) val {
	v := item
	for _, part := range strings.Split(path, ".") {
		switch {
		case v.attrContainer():
			x, ok := v.o.get(part)
			if !ok {
				return undef
			}
			v = x
		case v.isArr():
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v.a.items) {
				return undef
			}
			v = v.a.items[i]
		default:
			return undef
		}
	}
	return v
}

var leadingInt = regexp.MustCompile(`^[+-]?\d+`)
var leadingFloat = regexp.MustCompile(`^[+-]?(Infinity|\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)`)

// parseInt and parseFloat are JavaScript's, without radix prefixes.
func parseInt(s string) (float64, bool) {
	m := leadingInt.FindString(trimLeftJS(s))
	if m == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(m, 64)
	return f, err == nil
}

func parseFloat(s string) (float64, bool) {
	m := leadingFloat.FindString(strings.ToLower(trimLeftJS(s)))
	if m == "" {
		return 0, false
	}
	m = strings.Replace(m, "infinity", "inf", 1)
	f, err := strconv.ParseFloat(m, 64)
	return f, err == nil
}

// filter applies the filter f (an *ident or a *callExpr) to v.
func (in *interp) filter(v val, f node, e *env) (val, error) {
	if id, ok := f.(*ident); ok {
		return in.filterName(v, id.name)
	}
	c := f.(*callExpr)
	id, ok := c.callee.(*ident)
	if !ok {
		return val{}, errors.New("unknown filter")
	}
	name := id.name
	args, kw, err := in.args(c.args, e)
	if err != nil {
		return val{}, err
	}
	arg := func(i int, key string, def val) val {
		if i >= 0 && i < len(args) {
			return args[i]
		}
		if x, ok := kw.get(key); ok {
			return x
		}
		return def
	}
	switch name {
	case "tojson":
		indent := arg(-1, "indent", null)
		ascii := arg(-1, "ensure_ascii", boolVal(false))
		sortKeys := arg(-1, "sort_keys", boolVal(false))
		seps := arg(-1, "separators", null)
		if indent.k != kInt && indent.k != kNull {
			return val{}, errors.New("if set, indent must be a number")
		}
		if ascii.k != kBool || sortKeys.k != kBool {
			return val{}, errors.New("if set, ensure_ascii and sort_keys must be booleans")
		}
		o := jsonOpts{ensureASCII: ascii.b, sortKeys: sortKeys.b}
		if indent.k == kInt {
			o.indent = int(math.Max(0, math.Min(indent.n, 64)))
		}
		switch {
		case seps.isArr():
			if len(seps.a.items) != 2 || seps.a.items[0].k != kStr || seps.a.items[1].k != kStr {
				return val{}, errors.New("separators must be a tuple of two strings")
			}
			o.separators = &[2]string{seps.a.items[0].s, seps.a.items[1].s}
		case seps.k != kNull:
			return val{}, errors.New("if set, separators must be a tuple of two strings")
		}
		s, err := toJSON(v, o, 0, true)
		if err != nil {
			return val{}, err
		}
		return in.newString(s)
	case "join":
		var parts []string
		switch {
		case v.k == kStr:
			for _, r := range v.s {
				parts = append(parts, string(r))
			}
		case v.isArr():
			for _, x := range v.a.items {
				parts = append(parts, x.raw())
			}
		default:
			return val{}, fmt.Errorf("cannot apply filter %q to type: %v", name, v.k)
		}
		sep := arg(0, "separator", strVal(""))
		if sep.k != kStr {
			return val{}, errors.New("separator must be a string")
		}
		return in.newString(strings.Join(parts, sep.s))
	case "int", "float":
		def := arg(0, "default", intVal(0))
		if name == "float" {
			def = arg(0, "default", floatVal(0))
		}
		switch {
		case v.k == kStr:
			if name == "int" {
				n, ok := parseInt(v.s)
				if !ok {
					return def, nil
				}
				return intVal(n), nil
			}
			n, ok := parseFloat(v.s)
			if !ok {
				return def, nil
			}
			return floatVal(n), nil
		case v.isNum():
			return v, nil
		case v.k == kBool:
			if name == "int" {
				return intVal(float64(boolInt(v.b))), nil
			}
			return floatVal(float64(boolInt(v.b))), nil
		}
		return val{}, fmt.Errorf("cannot apply filter %q to type: %v", name, v.k)
	case "default":
		def := strVal("")
		if len(args) > 0 {
			def = args[0]
		}
		b := arg(1, "boolean", boolVal(false))
		if b.k != kBool {
			return val{}, errors.New("`default` filter flag must be a boolean")
		}
		if v.k == kUndef || b.b && !v.truth() {
			return def, nil
		}
		return v, nil
	}
	switch {
	case v.isArr():
		switch name {
		case "sort":
			rev := arg(0, "reverse", boolVal(false))
			cs := arg(1, "case_sensitive", boolVal(false))
			attr := arg(2, "attribute", null)
			if rev.k != kBool || cs.k != kBool {
				return val{}, errors.New("reverse and case_sensitive must be booleans")
			}
			key := func(x val) val { return x }
			switch attr.k {
			case kNull:
			case kStr, kInt:
				path := attr.raw()
				key = func(x val) val { return attrPath(x, path) }
			default:
				return val{}, errors.New("attribute must be a string, integer, or null")
			}
			out := slices.Clone(v.a.items)
			return arrVal(out), sortVals(out, key, cs.b, rev.b)
		case "selectattr", "rejectattr":
			for _, x := range v.a.items {
				if !x.attrContainer() {
					return val{}, fmt.Errorf("`%s` can only be applied to array of objects", name)
				}
			}
			for _, a := range c.args {
				if _, ok := a.(*strLit); !ok {
					return val{}, fmt.Errorf("arguments of `%s` must be strings", name)
				}
			}
			if len(args) == 0 {
				return val{}, fmt.Errorf("`%s` needs an attribute", name)
			}
			attr := args[0].s
			test := func(x val, _ []val) (bool, error) { return x.truth(), nil }
			if len(args) > 1 {
				t, ok := tests[args[1].s]
				switch {
				case args[1].s == "equalto" || args[1].s == "eq":
					test = func(x val, rest []val) (bool, error) {
						if len(rest) == 0 {
							return false, errors.New("the equalto test needs a value")
						}
						return strictEqual(x, rest[0]), nil
					}
				case ok:
					test = func(x val, _ []val) (bool, error) { return t(x) }
				default:
					return val{}, fmt.Errorf("unknown test: %s", args[1].s)
				}
			}
			var out []val
			for _, x := range v.a.items {
				a, ok := x.o.get(attr)
				r := false
				if ok {
					var err error
					if r, err = test(a, args[min(2, len(args)):]); err != nil {
						return val{}, err
					}
				}
				if r == (name == "selectattr") {
					out = append(out, x)
				}
			}
			return arrVal(out), nil
		case "map":
			attr, ok := kw.get("attribute")
			if !ok {
				return val{}, errors.New("`map` expressions without `attribute` set are not currently supported")
			}
			if attr.k != kStr {
				return val{}, errors.New("attribute must be a string")
			}
			def, hasDef := kw.get("default")
			out := make([]val, len(v.a.items))
			for i, x := range v.a.items {
				if !x.attrContainer() {
					return val{}, errors.New("items in map must be an object")
				}
				out[i] = attrPath(x, attr.s)
				if out[i].k == kUndef && hasDef {
					out[i] = def
				}
			}
			return arrVal(out), nil
		}
		return val{}, fmt.Errorf("unknown ArrayValue filter: %s", name)
	case v.k == kStr:
		switch name {
		case "indent":
			width := arg(0, "width", intVal(4))
			if width.k != kInt {
				return val{}, errors.New("width must be a number")
			}
			first := arg(1, "first", boolVal(false))
			blank := arg(2, "blank", boolVal(false))
			w := int(math.Max(0, math.Min(width.n, 1024)))
			return in.indent(v.s, strings.Repeat(" ", w), first.truth(), blank.truth())
		case "replace":
			all := append(slices.Clip(args), val{k: kKwargs, o: kw})
			return stringMethod(in, v.s, "replace").f.call(in, all, e)
		}
		return val{}, fmt.Errorf("unknown StringValue filter: %s", name)
	case v.isObj():
		m := objectMethod(v, name)
		if m.k == kFunc {
			if len(kw.keys) > 0 {
				args = append(args, val{k: kKwargs, o: kw})
			}
			return m.f.call(in, args, e)
		}
		return val{}, fmt.Errorf("unknown ObjectValue filter: %s", name)
	}
	return val{}, fmt.Errorf("cannot apply filter %q to type: %v", name, v.k)
}

func (in *interp) indent(s, pad string, first, blank bool) (val, error) {
	lines := strings.Split(s, "\n")
	if int64(len(s))+int64(len(lines))*int64(len(pad)) > MaxOutput {
		return val{}, fmt.Errorf("%w: a string of more than %d bytes", ErrLimit, MaxOutput)
	}
	for i, l := range lines {
		if !(i == 0 && !first || l == "" && !blank) {
			lines[i] = pad + l
		}
	}
	return in.newString(strings.Join(lines, "\n"))
}

// filterName applies a filter written without arguments.
func (in *interp) filterName(v val, name string) (val, error) {
	switch name {
	case "safe":
		return v, nil
	case "tojson":
		s, err := toJSON(v, jsonOpts{}, 0, true)
		if err != nil {
			return val{}, err
		}
		return in.newString(s)
	}
	switch {
	case v.isArr():
		items := v.a.items
		switch name {
		case "list":
			return v, nil
		case "first":
			if len(items) == 0 {
				return undef, nil
			}
			return items[0], nil
		case "last":
			if len(items) == 0 {
				return undef, nil
			}
			return items[len(items)-1], nil
		case "length":
			return intVal(float64(len(items))), nil
		case "reverse":
			out := slices.Clone(items)
			slices.Reverse(out)
			return arrVal(out), nil
		case "sort":
			out := slices.Clone(items)
			return arrVal(out), sortVals(out, func(x val) val { return x }, false, false)
		case "join":
			var b strings.Builder
			for _, x := range items {
				b.WriteString(x.raw())
				if b.Len() > MaxOutput {
					return val{}, fmt.Errorf("%w: a string of more than %d bytes", ErrLimit, MaxOutput)
				}
			}
			return in.newString(b.String())
		case "string":
			s, err := toJSON(v, jsonOpts{}, 0, false)
			if err != nil {
				return val{}, err
			}
			return in.newString(s)
		case "unique":
			var out []val
			for _, x := range items {
				if !slices.ContainsFunc(out, func(y val) bool { return strictEqual(x, y) }) {
					out = append(out, x)
				}
			}
			if err := in.step(int64(len(items) * (len(out) + 1))); err != nil {
				return val{}, err
			}
			return arrVal(out), nil
		}
		return val{}, fmt.Errorf("unknown ArrayValue filter: %s", name)
	case v.k == kStr:
		switch name {
		case "length":
			return intVal(float64(utf16Len(v.s))), nil
		case "upper", "lower", "title", "capitalize":
			return stringMethod(in, v.s, name).f.call(in, nil, nil)
		case "trim":
			return strVal(trimJS(v.s)), nil
		case "indent":
			return in.indent(v.s, "    ", false, false)
		case "join", "string":
			return v, nil
		case "int":
			n, ok := parseInt(v.s)
			if !ok {
				return intVal(0), nil
			}
			return intVal(n), nil
		case "float":
			n, ok := parseFloat(v.s)
			if !ok {
				return floatVal(0), nil
			}
			return floatVal(n), nil
		}
		return val{}, fmt.Errorf("unknown StringValue filter: %s", name)
	case v.isNum():
		switch name {
		case "abs":
			return val{k: v.k, n: math.Abs(v.n)}, nil
		case "int":
			return intVal(math.Floor(v.n)), nil
		case "float":
			return floatVal(v.n), nil
		case "string":
			return strVal(v.str()), nil
		}
		return val{}, fmt.Errorf("unknown NumericValue filter: %s", name)
	case v.isObj():
		switch name {
		case "items":
			return items(in, v.o)
		case "length":
			return intVal(float64(len(v.o.keys))), nil
		}
		m := objectMethod(v, name)
		if m.k == kFunc {
			return m.f.call(in, nil, nil)
		}
		return val{}, fmt.Errorf("unknown ObjectValue filter: %s", name)
	case v.k == kBool:
		switch name {
		case "bool":
			return v, nil
		case "int":
			return intVal(float64(boolInt(v.b))), nil
		case "float":
			return floatVal(float64(boolInt(v.b))), nil
		case "string":
			return strVal(v.raw()), nil
		}
		return val{}, fmt.Errorf("unknown BooleanValue filter: %s", name)
	}
	return val{}, fmt.Errorf("cannot apply filter %q to type: %v", name, v.k)
}
