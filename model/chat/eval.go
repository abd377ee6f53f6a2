package chat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unsafe"
)

var (
	errBreak    = errors.New("break outside a loop")
	errContinue = errors.New("continue outside a loop")
)

// env is one scope of variables.
type env struct {
	vars   map[string]val
	parent *env
}

func newEnv(parent *env) *env { return &env{vars: map[string]val{}, parent: parent} }

func (e *env) lookup(name string) val {
	for ; e != nil; e = e.parent {
		if v, ok := e.vars[name]; ok {
			return v
		}
	}
	if name == "namespace" {
		return namespaceFn
	}
	return undef
}

// interp is the state of one rendering: the work done so far, against the
// limits.
type interp struct {
	steps int64
	alloc int64
	depth int
}

func (in *interp) step(n int64) error {
	in.steps += n
	if in.steps > maxSteps {
		return fmt.Errorf("%w: more than %d steps", ErrLimit, maxSteps)
	}
	return nil
}

// newVals accounts for n values the template built, as steps and as
// bytes.
func (in *interp) newVals(n int) error {
	if err := in.step(int64(n)); err != nil {
		return err
	}
	in.alloc += int64(n) * int64(unsafe.Sizeof(val{}))
	if in.alloc > maxAlloc {
		return fmt.Errorf("%w: more than %d bytes of values built", ErrLimit, maxAlloc)
	}
	return nil
}

// newString accounts for a string the template built.
func (in *interp) newString(s string) (val, error) {
	if len(s) > MaxOutput {
		return val{}, fmt.Errorf("%w: a string of more than %d bytes", ErrLimit, MaxOutput)
	}
	in.alloc += int64(len(s))
	if in.alloc > maxAlloc {
		return val{}, fmt.Errorf("%w: more than %d bytes of strings built", ErrLimit, maxAlloc)
	}
	return strVal(s), nil
}

// output is the text of v in a block's output.
func (in *interp) output(v val) (string, error) {
	switch v.k {
	case kArr, kTuple, kObj, kKwargs, kNS:
		return toJSON(v, jsonOpts{}, 0, false)
	}
	return v.str(), nil
}

func (in *interp) block(nodes []node, e *env) (val, error) {
	var b strings.Builder
	for _, n := range nodes {
		v, err := in.eval(n, e)
		if err != nil {
			return val{}, err
		}
		if v.k == kNull || v.k == kUndef {
			continue
		}
		s, err := in.output(v)
		if err != nil {
			return val{}, err
		}
		if b.Len()+len(s) > MaxOutput {
			return val{}, fmt.Errorf("%w: output of more than %d bytes", ErrLimit, MaxOutput)
		}
		b.WriteString(s)
	}
	return in.newString(b.String())
}

func (in *interp) eval(n node, e *env) (val, error) {
	if n == nil {
		return undef, nil
	}
	if err := in.step(1); err != nil {
		return val{}, err
	}
	in.depth++
	defer func() { in.depth-- }()
	if in.depth > maxEvalDepth {
		return val{}, fmt.Errorf("%w: evaluation nested deeper than %d (recursion?)", ErrLimit, maxEvalDepth)
	}
	switch n := n.(type) {
	case *textNode:
		return strVal(n.s), nil
	case *commentNode:
		return null, nil
	case *setNode:
		return null, in.set(n, e)
	case *ifNode:
		t, err := in.eval(n.test, e)
		if err != nil {
			return val{}, err
		}
		if t.truth() {
			return in.block(n.body, e)
		}
		return in.block(n.alt, e)
	case *forNode:
		return in.forLoop(n, e)
	case *macroNode:
		in.macro(n, e)
		return null, nil
	case *callStmt:
		return in.callStatement(n, e)
	case *filterStmt:
		body, err := in.block(n.body, e)
		if err != nil {
			return val{}, err
		}
		return in.filter(body, n.filter, e)
	case *breakNode:
		return val{}, errBreak
	case *continueNode:
		return val{}, errContinue
	case *intLit:
		return intVal(n.n), nil
	case *floatLit:
		return floatVal(n.n), nil
	case *strLit:
		return strVal(n.s), nil
	case *arrLit, *tupleLit:
		var nodes []node
		k := kArr
		if a, ok := n.(*arrLit); ok {
			nodes = a.items
		} else {
			nodes, k = n.(*tupleLit).items, kTuple
		}
		items := make([]val, len(nodes))
		for i, x := range nodes {
			v, err := in.eval(x, e)
			if err != nil {
				return val{}, err
			}
			items[i] = v
		}
		return val{k: k, a: &array{items}}, nil
	case *objLit:
		o := newObject()
		for i, kn := range n.keys {
			k, err := in.eval(kn, e)
			if err != nil {
				return val{}, err
			}
			if k.k != kStr {
				return val{}, fmt.Errorf("object keys must be strings: got %v", k.k)
			}
			v, err := in.eval(n.vals[i], e)
			if err != nil {
				return val{}, err
			}
			o.set(k.s, v)
		}
		return objVal(o), nil
	case *ident:
		return e.lookup(n.name), nil
	case *callExpr:
		args, kw, err := in.args(n.args, e)
		if err != nil {
			return val{}, err
		}
		if len(kw.keys) > 0 {
			args = append(args, val{k: kKwargs, o: kw})
		}
		fn, err := in.eval(n.callee, e)
		if err != nil {
			return val{}, err
		}
		if fn.k != kFunc {
			return val{}, fmt.Errorf("cannot call something that is not a function: got %v", fn.k)
		}
		return fn.f.call(in, args, e)
	case *member:
		return in.member(n, e)
	case *unary:
		return in.unary(n, e)
	case *binary:
		return in.binary(n, e)
	case *filterExpr:
		v, err := in.eval(n.operand, e)
		if err != nil {
			return val{}, err
		}
		return in.filter(v, n.filter, e)
	case *testExpr:
		v, err := in.eval(n.operand, e)
		if err != nil {
			return val{}, err
		}
		t, ok := tests[n.name]
		if !ok {
			return val{}, fmt.Errorf("unknown test: %s", n.name)
		}
		r, err := t(v)
		if err != nil {
			return val{}, err
		}
		return boolVal(r != n.negate), nil
	case *selectExpr:
		t, err := in.eval(n.test, e)
		if err != nil || !t.truth() {
			return undef, err
		}
		return in.eval(n.lhs, e)
	case *ternary:
		c, err := in.eval(n.cond, e)
		if err != nil {
			return val{}, err
		}
		if c.truth() {
			return in.eval(n.t, e)
		}
		return in.eval(n.f, e)
	}
	return val{}, fmt.Errorf("unknown node %T", n)
}

func (in *interp) set(n *setNode, e *env) error {
	var rhs val
	var err error
	if n.value != nil {
		rhs, err = in.eval(n.value, e)
	} else {
		rhs, err = in.block(n.body, e)
	}
	if err != nil {
		return err
	}
	switch a := n.assignee.(type) {
	case *ident:
		e.vars[a.name] = rhs
	case *tupleLit:
		if !rhs.isArr() {
			return fmt.Errorf("cannot unpack non-iterable type in set: %v", rhs.k)
		}
		if len(rhs.a.items) != len(a.items) {
			return errors.New("wrong number of items to unpack in set")
		}
		for i, x := range a.items {
			id, ok := x.(*ident)
			if !ok {
				return errors.New("cannot unpack to a non-identifier in set")
			}
			e.vars[id.name] = rhs.a.items[i]
		}
	case *member:
		obj, err := in.eval(a.obj, e)
		if err != nil {
			return err
		}
		if obj.k != kNS {
			return errors.New("cannot assign attribute on non-namespace object")
		}
		id, ok := a.prop.(*ident)
		if !ok {
			return errors.New("cannot assign to member with non-identifier property")
		}
		obj.o.set(id.name, rhs)
	default:
		return errors.New("invalid left-hand side of set")
	}
	return nil
}

func (in *interp) forLoop(n *forNode, e *env) (val, error) {
	scope := newEnv(e)
	iterNode, test := n.iterable, node(nil)
	if s, ok := n.iterable.(*selectExpr); ok {
		iterNode, test = s.lhs, s.test
	}
	it, err := in.eval(iterNode, scope)
	if err != nil {
		return val{}, err
	}
	var all []val
	switch {
	case it.isArr():
		all = it.a.items
	case it.isObj():
		for _, k := range it.o.keys {
			all = append(all, strVal(k))
		}
	default:
		return val{}, fmt.Errorf("expected iterable or object type in for loop: got %v", it.k)
	}
	bind := func(s *env, cur val) error {
		switch lv := n.loopvar.(type) {
		case *ident:
			s.vars[lv.name] = cur
		case *tupleLit:
			if cur.k != kArr {
				return fmt.Errorf("cannot unpack non-iterable type: %v", cur.k)
			}
			if len(lv.items) != len(cur.a.items) {
				return errors.New("wrong number of items to unpack")
			}
			for j, x := range lv.items {
				id, ok := x.(*ident)
				if !ok {
					return errors.New("cannot unpack to a non-identifier")
				}
				s.vars[id.name] = cur.a.items[j]
			}
		}
		return nil
	}
	items := all
	if test != nil {
		items = nil
		for _, cur := range all {
			ls := newEnv(scope)
			if err := bind(ls, cur); err != nil {
				return val{}, err
			}
			t, err := in.eval(test, ls)
			if err != nil {
				return val{}, err
			}
			if t.truth() {
				items = append(items, cur)
			}
		}
	} else if n, ok := n.loopvar.(*tupleLit); ok {
		for _, cur := range items { // unpacking errors come before the body runs
			if cur.k != kArr {
				return val{}, fmt.Errorf("cannot unpack non-iterable type: %v", cur.k)
			}
			if len(n.items) != len(cur.a.items) {
				return val{}, errors.New("wrong number of items to unpack")
			}
		}
	}
	var b strings.Builder
	ran := false
	for i, cur := range items {
		if err := in.step(loopStepCost); err != nil {
			return val{}, err
		}
		l := float64(len(items))
		prev, next := undef, undef
		if i > 0 {
			prev = items[i-1]
		}
		if i < len(items)-1 {
			next = items[i+1]
		}
		loop := &object{keys: loopKeys, m: map[string]val{
			"index": intVal(float64(i + 1)), "index0": intVal(float64(i)),
			"revindex": intVal(l - float64(i)), "revindex0": intVal(l - float64(i) - 1),
			"first": boolVal(i == 0), "last": boolVal(i == len(items)-1), "length": intVal(l),
			"previtem": prev, "nextitem": next,
		}}
		scope.vars["loop"] = objVal(loop)
		if err := bind(scope, cur); err != nil {
			return val{}, err
		}
		out, err := in.block(n.body, scope)
		if errors.Is(err, errContinue) {
			continue
		}
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil {
			return val{}, err
		}
		if b.Len()+len(out.s) > MaxOutput {
			return val{}, fmt.Errorf("%w: output of more than %d bytes", ErrLimit, MaxOutput)
		}
		b.WriteString(out.s)
		ran = true
	}
	if !ran {
		out, err := in.block(n.alt, scope)
		if err != nil {
			return val{}, err
		}
		b.WriteString(out.s)
	}
	return in.newString(b.String())
}

// loopKeys are the keys of loop, in order; objects other than namespaces
// are never changed, so every loop object shares them.
var loopKeys = []string{"index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem"}

// specialArgs reports whether body uses kwargs and varargs that params do
// not declare.
func specialArgs(params []node, body []node) (kwargs, varargs bool) {
	declared := map[string]bool{}
	for _, p := range params {
		switch p := p.(type) {
		case *ident:
			declared[p.name] = true
		case *kwarg:
			declared[p.key] = true
		}
	}
	var visit func(n node)
	visit = func(n node) {
		switch n := n.(type) {
		case *ident:
			kwargs = kwargs || n.name == "kwargs" && !declared["kwargs"]
			varargs = varargs || n.name == "varargs" && !declared["varargs"]
		case []node:
			for _, x := range n {
				visit(x)
			}
		case *ifNode:
			visit(n.test)
			visit(n.body)
			visit(n.alt)
		case *forNode:
			visit(n.iterable)
			visit(n.body)
			visit(n.alt)
		case *setNode:
			visit(n.value)
			visit(n.body)
		case *macroNode:
			for _, p := range n.params {
				if k, ok := p.(*kwarg); ok {
					visit(k.value)
				}
			}
			visit(n.body)
		case *callStmt:
			visit(n.call)
			visit(n.body)
		case *filterStmt:
			visit(n.filter)
			visit(n.body)
		case *arrLit:
			visit(n.items)
		case *tupleLit:
			visit(n.items)
		case *objLit:
			visit(n.keys)
			visit(n.vals)
		case *member:
			visit(n.obj)
			if n.computed {
				visit(n.prop)
			}
		case *callExpr:
			visit(n.callee)
			visit(n.args)
		case *binary:
			visit(n.l)
			visit(n.r)
		case *unary:
			visit(n.arg)
		case *filterExpr:
			visit(n.operand)
			if c, ok := n.filter.(*callExpr); ok {
				visit(c.args)
			}
		case *testExpr:
			visit(n.operand)
		case *selectExpr:
			visit(n.lhs)
			visit(n.test)
		case *ternary:
			visit(n.cond)
			visit(n.t)
			visit(n.f)
		case *sliceExpr:
			visit(n.start)
			visit(n.stop)
			visit(n.step)
		case *kwarg:
			visit(n.value)
		case *spread:
			visit(n.arg)
		case *kwspread:
			visit(n.arg)
		}
	}
	visit(body)
	return kwargs, varargs
}

func (in *interp) bindArgs(name string, params []node, kw, va bool, args []val, scope *env) error {
	pos := args
	kwargs := newObject()
	if len(pos) > 0 && pos[len(pos)-1].k == kKwargs {
		for _, k := range pos[len(pos)-1].o.keys {
			kwargs.set(k, pos[len(pos)-1].o.m[k])
		}
		pos = pos[:len(pos)-1]
	}
	type pending struct {
		name string
		def  node
	}
	var defaults []pending
	for i, p := range params {
		var pname string
		var def node
		switch p := p.(type) {
		case *ident:
			pname = p.name
		case *kwarg:
			pname, def = p.key, p.value
		}
		v, have := undef, false
		if i < len(pos) {
			v, have = pos[i], true
		} else if x, ok := kwargs.get(pname); ok {
			v, have = x, true
			delete(kwargs.m, pname)
			kwargs.keys = slices.DeleteFunc(kwargs.keys, func(k string) bool { return k == pname })
		}
		if !have && def != nil {
			defaults = append(defaults, pending{pname, def})
		}
		scope.vars[pname] = v
	}
	if kw {
		scope.vars["kwargs"] = objVal(kwargs)
	} else if len(kwargs.keys) > 0 {
		return fmt.Errorf("macro %s takes no keyword argument '%s'", name, kwargs.keys[0])
	}
	if va {
		var rest []val
		if len(pos) > len(params) {
			rest = slices.Clone(pos[len(params):])
		}
		scope.vars["varargs"] = arrVal(rest)
	} else if len(pos) > len(params) {
		return fmt.Errorf("macro %s takes not more than %d argument(s)", name, len(params))
	}
	for _, d := range defaults {
		v, err := in.eval(d.def, scope)
		if err != nil {
			return err
		}
		scope.vars[d.name] = v
	}
	return nil
}

func (in *interp) macro(n *macroNode, e *env) {
	kw, va := specialArgs(n.params, n.body)
	e.vars[n.name] = fnVal(n.name, func(in *interp, args []val, caller *env) (val, error) {
		scope := newEnv(caller)
		if err := in.bindArgs("'"+n.name+"'", n.params, kw, va, args, scope); err != nil {
			return val{}, err
		}
		return in.block(n.body, scope)
	})
}

func (in *interp) callStatement(n *callStmt, e *env) (val, error) {
	kw, va := specialArgs(n.callerArgs, n.body)
	callerFn := fnVal("caller", func(in *interp, args []val, _ *env) (val, error) {
		scope := newEnv(e)
		if err := in.bindArgs("None", n.callerArgs, kw, va, args, scope); err != nil {
			return val{}, err
		}
		return in.block(n.body, scope)
	})
	args, kwargs, err := in.args(n.call.args, e)
	if err != nil {
		return val{}, err
	}
	args = append(args, val{k: kKwargs, o: kwargs})
	fn, err := in.eval(n.call.callee, e)
	if err != nil {
		return val{}, err
	}
	if fn.k != kFunc {
		return val{}, fmt.Errorf("cannot call something that is not a function: got %v", fn.k)
	}
	scope := newEnv(e)
	scope.vars["caller"] = callerFn
	return fn.f.call(in, args, scope)
}

// args evaluates call arguments: positional ones, then keyword ones.
func (in *interp) args(nodes []node, e *env) ([]val, *object, error) {
	var pos []val
	kw := newObject()
	for _, a := range nodes {
		switch a := a.(type) {
		case *spread:
			v, err := in.eval(a.arg, e)
			if err != nil {
				return nil, nil, err
			}
			if !v.isArr() {
				return nil, nil, fmt.Errorf("cannot unpack non-iterable type: %v", v.k)
			}
			pos = append(pos, v.a.items...)
		case *kwarg, *kwspread:
		default:
			v, err := in.eval(a, e)
			if err != nil {
				return nil, nil, err
			}
			pos = append(pos, v)
		}
	}
	add := func(k string, v val) error {
		if _, ok := kw.get(k); ok {
			return fmt.Errorf("got multiple values for keyword argument '%s'", k)
		}
		kw.set(k, v)
		return nil
	}
	for _, a := range nodes {
		switch a := a.(type) {
		case *kwarg:
			v, err := in.eval(a.value, e)
			if err != nil {
				return nil, nil, err
			}
			if err := add(a.key, v); err != nil {
				return nil, nil, err
			}
		case *kwspread:
			v, err := in.eval(a.arg, e)
			if err != nil {
				return nil, nil, err
			}
			if !v.isObj() {
				return nil, nil, fmt.Errorf("argument after ** must be a mapping, not %v", v.k)
			}
			for _, k := range v.o.keys {
				if err := add(k, v.o.m[k]); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return pos, kw, nil
}

func (in *interp) member(n *member, e *env) (val, error) {
	obj, err := in.eval(n.obj, e)
	if err != nil {
		return val{}, err
	}
	var prop val
	switch {
	case n.computed:
		if s, ok := n.prop.(*sliceExpr); ok {
			return in.slice(obj, s, e)
		}
		if prop, err = in.eval(n.prop, e); err != nil {
			return val{}, err
		}
	default:
		switch p := n.prop.(type) {
		case *intLit:
			prop = intVal(p.n)
		case *ident:
			prop = strVal(p.name)
		}
	}
	switch {
	case obj.attrContainer():
		if prop.k != kStr {
			return val{}, fmt.Errorf("cannot access property with non-string: got %v", prop.k)
		}
		if v, ok := obj.o.get(prop.s); ok {
			return v, nil
		}
		if obj.isObj() {
			return objectMethod(obj, prop.s), nil
		}
		return undef, nil
	case obj.isArr() || obj.k == kStr:
		switch prop.k {
		case kInt:
			return index(obj, prop.n), nil
		case kStr:
			if obj.k == kStr {
				return stringMethod(in, obj.s, prop.s), nil
			}
			if prop.s == "length" {
				return intVal(float64(len(obj.a.items))), nil
			}
			return undef, nil
		}
		return val{}, fmt.Errorf("cannot access property with non-string/non-number: got %v", prop.k)
	}
	if prop.k != kStr {
		return val{}, fmt.Errorf("cannot access property with non-string: got %v", prop.k)
	}
	return undef, nil
}

// index is Array.prototype.at and String.prototype.at (UTF-16 units).
func index(obj val, f float64) val {
	i := int(math.Trunc(f))
	if math.IsNaN(f) {
		i = 0
	}
	if obj.k == kStr {
		u := utf16.Encode([]rune(obj.s))
		if i < 0 {
			i += len(u)
		}
		if i < 0 || i >= len(u) {
			return undef
		}
		return strVal(string(utf16.Decode(u[i : i+1])))
	}
	items := obj.a.items
	if i < 0 {
		i += len(items)
	}
	if i < 0 || i >= len(items) {
		return undef
	}
	return items[i]
}

func (in *interp) slice(obj val, s *sliceExpr, e *env) (val, error) {
	if !obj.isArr() && obj.k != kStr {
		return val{}, errors.New("slice object must be an array or string")
	}
	var bounds [3]*float64
	for i, x := range []node{s.start, s.stop, s.step} {
		v, err := in.eval(x, e)
		if err != nil {
			return val{}, err
		}
		switch v.k {
		case kUndef:
		case kInt:
			n := v.n
			bounds[i] = &n
		default:
			return val{}, errors.New("slice bounds must be integers or undefined")
		}
	}
	var n int
	var runes []rune
	if obj.k == kStr {
		runes = []rune(obj.s)
		n = len(runes)
	} else {
		n = len(obj.a.items)
	}
	idx, err := sliceIndices(n, bounds[0], bounds[1], bounds[2])
	if err != nil {
		return val{}, err
	}
	if err := in.step(int64(len(idx))); err != nil {
		return val{}, err
	}
	if obj.k == kStr {
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return in.newString(string(out))
	}
	items := make([]val, len(idx))
	for i, j := range idx {
		items[i] = obj.a.items[j]
	}
	return arrVal(items), nil
}

// sliceIndices are the indices a[start:stop:step] takes, as the renderer's
// slice helper.
func sliceIndices(n int, start, stop, step *float64) ([]int, error) {
	st := 1.0
	if step != nil {
		st = *step
	}
	if st == 0 {
		return nil, nil
	}
	l := float64(n)
	var a, b float64
	if st > 0 {
		a, b = 0, l
		if start != nil {
			a = *start
		}
		if stop != nil {
			b = *stop
		}
		a = clampIdx(a, l, 0)
		b = clampIdx(b, l, 0)
	} else {
		a, b = l-1, -1
		if start != nil {
			a = *start
		}
		if stop != nil {
			b = *stop
		}
		if a < 0 {
			a = math.Max(l+a, -1)
		} else {
			a = math.Min(a, l-1)
		}
		if b < -1 {
			b = math.Max(l+b, -1)
		} else {
			b = math.Min(b, l-1)
		}
	}
	var idx []int
	for i := a; math.Copysign(1, st)*i < math.Copysign(1, st)*b; i += st {
		if len(idx) > n {
			break
		}
		idx = append(idx, int(i))
	}
	return idx, nil
}

func clampIdx(x, l, lo float64) float64 {
	if x < 0 {
		return math.Max(l+x, lo)
	}
	return math.Min(x, l)
}

func (in *interp) unary(n *unary, e *env) (val, error) {
	v, err := in.eval(n.arg, e)
	if err != nil {
		return val{}, err
	}
	switch n.op {
	case "not":
		return boolVal(!v.truth()), nil
	case "-", "+":
		sign := 1.0
		if n.op == "-" {
			sign = -1
		}
		switch v.k {
		case kInt, kFloat:
			return val{k: v.k, n: sign * v.n}, nil
		case kBool:
			return intVal(sign * float64(boolInt(v.b))), nil
		}
		return val{}, fmt.Errorf("unknown operator %q for %v", n.op, v.k)
	}
	return val{}, fmt.Errorf("unknown operator %q", n.op)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func numLike(v val) (float64, bool) {
	switch v.k {
	case kInt, kFloat:
		return v.n, true
	case kBool:
		return float64(boolInt(v.b)), true
	}
	return 0, false
}

func (in *interp) binary(n *binary, e *env) (val, error) {
	l, err := in.eval(n.l, e)
	if err != nil {
		return val{}, err
	}
	switch n.op {
	case "and":
		if !l.truth() {
			return l, nil
		}
		return in.eval(n.r, e)
	case "or":
		if l.truth() {
			return l, nil
		}
		return in.eval(n.r, e)
	}
	r, err := in.eval(n.r, e)
	if err != nil {
		return val{}, err
	}
	switch n.op {
	case "==":
		return boolVal(looseEqual(l, r)), nil
	case "!=":
		return boolVal(!looseEqual(l, r)), nil
	}
	switch {
	case l.k == kUndef || r.k == kUndef:
		if r.k == kUndef && (n.op == "in" || n.op == "not in") {
			return boolVal(n.op == "not in"), nil
		}
		return val{}, fmt.Errorf("cannot perform operation %s on undefined values", n.op)
	case l.k == kNull || r.k == kNull:
		return val{}, errors.New("cannot perform operation on null values")
	case n.op == "~":
		return in.newString(l.raw() + r.raw())
	}
	if a, ok := numLike(l); ok && n.op == "**" {
		if b, ok := numLike(r); ok {
			if a == 0 && b < 0 {
				return val{}, errors.New("0.0 cannot be raised to a negative power")
			}
			res := math.Pow(a, b)
			if math.IsInf(res, 0) || math.IsNaN(res) {
				return val{}, errors.New("exponentiation result is not a finite real number")
			}
			if l.k == kFloat || r.k == kFloat || b < 0 {
				return floatVal(res), nil
			}
			return intVal(res), nil
		}
	}
	switch {
	case l.isNum() && r.isNum():
		a, b := l.n, r.n
		k := kInt
		if l.k == kFloat || r.k == kFloat {
			k = kFloat
		}
		switch n.op {
		case "+":
			return val{k: k, n: a + b}, nil
		case "-":
			return val{k: k, n: a - b}, nil
		case "*":
			return val{k: k, n: a * b}, nil
		case "/":
			return floatVal(a / b), nil
		case "//":
			return val{k: k, n: math.Floor(a / b)}, nil
		case "%":
			return val{k: k, n: math.Mod(a, b)}, nil
		case "<":
			return boolVal(a < b), nil
		case ">":
			return boolVal(a > b), nil
		case ">=":
			return boolVal(a >= b), nil
		case "<=":
			return boolVal(a <= b), nil
		}
	case l.isArr() && r.isArr():
		if n.op == "+" {
			if err := in.newVals(len(l.a.items) + len(r.a.items)); err != nil {
				return val{}, err
			}
			return arrVal(append(slices.Clip(l.a.items), r.a.items...)), nil
		}
	case r.isArr():
		if n.op == "in" || n.op == "not in" {
			found := slices.ContainsFunc(r.a.items, func(x val) bool { return strictEqual(x, l) })
			return boolVal(found == (n.op == "in")), nil
		}
	}
	if (l.k == kStr || r.k == kStr) && n.op == "+" {
		return in.newString(l.raw() + r.raw())
	}
	if l.k == kStr && r.k == kStr && (n.op == "in" || n.op == "not in") {
		return boolVal(strings.Contains(r.s, l.s) == (n.op == "in")), nil
	}
	if l.k == kStr && r.isObj() && (n.op == "in" || n.op == "not in") {
		_, ok := r.o.get(l.s)
		return boolVal(ok == (n.op == "in")), nil
	}
	return val{}, fmt.Errorf("unknown operator %q between %v and %v", n.op, l.k, r.k)
}

// tests are the tests of "x is name".
var tests = map[string]func(v val) (bool, error){
	"boolean":  func(v val) (bool, error) { return v.k == kBool, nil },
	"callable": func(v val) (bool, error) { return v.k == kFunc, nil },
	"odd": func(v val) (bool, error) {
		if v.k != kInt {
			return false, fmt.Errorf("cannot odd on %v", v.k)
		}
		return math.Mod(v.n, 2) != 0, nil
	},
	"even": func(v val) (bool, error) {
		if v.k != kInt {
			return false, fmt.Errorf("cannot even on %v", v.k)
		}
		return math.Mod(v.n, 2) == 0, nil
	},
	"false":    func(v val) (bool, error) { return v.k == kBool && !v.b, nil },
	"true":     func(v val) (bool, error) { return v.k == kBool && v.b, nil },
	"none":     func(v val) (bool, error) { return v.k == kNull, nil },
	"string":   func(v val) (bool, error) { return v.k == kStr, nil },
	"number":   func(v val) (bool, error) { return v.isNum(), nil },
	"integer":  func(v val) (bool, error) { return v.k == kInt, nil },
	"iterable": func(v val) (bool, error) { return v.k == kArr || v.k == kStr, nil },
	"mapping":  func(v val) (bool, error) { return v.isObj(), nil },
	"sequence": func(v val) (bool, error) { return v.isArr() || v.isObj() || v.k == kStr, nil },
	"lower": func(v val) (bool, error) {
		if v.k != kStr {
			return false, fmt.Errorf("cannot test lower on %v", v.k)
		}
		return v.s == strings.ToLower(v.s), nil
	},
	"upper": func(v val) (bool, error) {
		if v.k != kStr {
			return false, fmt.Errorf("cannot test upper on %v", v.k)
		}
		return v.s == strings.ToUpper(v.s), nil
	},
	"defined":   func(v val) (bool, error) { return v.k != kUndef, nil },
	"undefined": func(v val) (bool, error) { return v.k == kUndef, nil },
}

// namespaceFn is namespace(...), in every scope.
var namespaceFn = fnVal("namespace", func(in *interp, args []val, _ *env) (val, error) {
	var kw *object
	if len(args) > 0 && args[len(args)-1].k == kKwargs {
		kw, args = args[len(args)-1].o, args[:len(args)-1]
	}
	if len(args) > 1 {
		return val{}, fmt.Errorf("namespace expected at most 1 argument, got %d", len(args))
	}
	ns := newObject()
	if len(args) == 1 {
		src := args[0]
		switch {
		case src.isObj():
			for _, k := range src.o.keys {
				ns.set(k, src.o.m[k])
			}
		case src.isArr():
			for _, pair := range src.a.items {
				var kv []val
				if pair.isArr() {
					kv = pair.a.items
				} else if pair.k == kStr {
					for _, r := range pair.s {
						kv = append(kv, strVal(string(r)))
					}
				}
				if len(kv) != 2 {
					return val{}, errors.New("namespace expected an object or an iterable of [key, value] pairs")
				}
				if kv[0].k != kStr {
					return val{}, errors.New("namespace keys must be strings")
				}
				ns.set(kv[0].s, kv[1])
			}
		default:
			return val{}, fmt.Errorf("'%v' object is not iterable", src.k)
		}
	}
	if kw != nil {
		for _, k := range kw.keys {
			ns.set(k, kw.m[k])
		}
	}
	return val{k: kNS, o: ns}, nil
})

// globals are the renderer's global variables.
func globals() map[string]val {
	return map[string]val{
		"false": boolVal(false), "true": boolVal(true), "none": null,
		"False": boolVal(false), "True": boolVal(true), "None": null,
		"raise_exception": fnVal("raise_exception", func(_ *interp, args []val, _ *env) (val, error) {
			msg := ""
			if len(args) > 0 && args[0].k != kUndef {
				msg = args[0].raw()
			}
			return val{}, &RaiseError{Message: msg}
		}),
		"range": fnVal("range", func(in *interp, args []val, _ *env) (val, error) {
			var nums []float64
			for _, a := range args {
				if a.k == kUndef {
					break
				}
				n, ok := numLike(a)
				if !ok {
					return val{}, fmt.Errorf("range() takes numbers, got %v", a.k)
				}
				nums = append(nums, n)
			}
			if len(nums) == 0 {
				return arrVal(nil), nil
			}
			start, stop, step := 0.0, nums[0], 1.0
			if len(nums) > 1 {
				start, stop = nums[0], nums[1]
			}
			if len(nums) > 2 {
				step = nums[2]
			}
			if step == 0 {
				return val{}, errors.New("range() step must not be zero")
			}
			count := math.Ceil((stop - start) / step)
			if count > 0 {
				if count > maxSteps || in.newVals(int(count)) != nil {
					return val{}, fmt.Errorf("%w: range of %v numbers", ErrLimit, count)
				}
			}
			var items []val
			for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
				if i == math.Trunc(i) {
					items = append(items, intVal(i))
				} else {
					items = append(items, floatVal(i))
				}
			}
			return arrVal(items), nil
		}),
		"strftime_now": fnVal("strftime_now", func(in *interp, args []val, _ *env) (val, error) {
			format := ""
			if len(args) > 0 {
				format = args[0].raw()
			}
			return in.newString(strftime(time.Now(), format))
		}),
	}
}

// strftime formats t with the directives the renderer knows: %Y %m %d %b
// %B %H %M %%.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
