package chat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// node is a statement or an expression of the syntax tree.
type node interface{}

type (
	textNode    struct{ s string }
	commentNode struct{}
	ifNode      struct {
		test      node
		body, alt []node
	}
	forNode struct {
		loopvar, iterable node
		body, alt         []node
	}
	breakNode    struct{}
	continueNode struct{}
	setNode      struct {
		assignee, value node // value nil: the body's output
		body            []node
	}
	macroNode struct {
		name   string
		params []node
		body   []node
	}
	callStmt struct {
		call       *callExpr
		callerArgs []node
		body       []node
	}
	filterStmt struct {
		filter node // *ident or *callExpr
		body   []node
	}

	ident    struct{ name string }
	intLit   struct{ n float64 }
	floatLit struct{ n float64 }
	strLit   struct{ s string }
	arrLit   struct{ items []node }
	tupleLit struct{ items []node }
	objLit   struct{ keys, vals []node }
	member   struct {
		obj, prop node
		computed  bool
	}
	callExpr struct {
		callee node
		args   []node
	}
	binary struct {
		op   string
		l, r node
	}
	unary struct {
		op  string
		arg node
	}
	filterExpr struct {
		operand, filter node
	}
	testExpr struct {
		operand node
		negate  bool
		name    string
	}
	selectExpr struct{ lhs, test node }
	ternary    struct{ cond, t, f node }
	sliceExpr  struct{ start, stop, step node }
	kwarg      struct {
		key   string
		value node
	}
	spread   struct{ arg node }
	kwspread struct{ arg node }
)

type parser struct {
	toks  []token
	pos   int
	depth int
}

// parse builds the syntax tree of tokens.
func parse(toks []token) (body []node, err error) {
	p := &parser{toks: toks}
	for p.pos < len(p.toks) {
		n, err := p.any()
		if err != nil {
			return nil, err
		}
		body = append(body, n)
	}
	return body, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("%w: template nested deeper than %d", ErrLimit, maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) peek(i int) (token, bool) {
	if p.pos+i < len(p.toks) {
		return p.toks[p.pos+i], true
	}
	return token{}, false
}

func (p *parser) is(types ...tokType) bool {
	for i, t := range types {
		tok, ok := p.peek(i)
		if !ok || tok.t != t {
			return false
		}
	}
	return true
}

func (p *parser) isIdent(names ...string) bool {
	for i, name := range names {
		tok, ok := p.peek(i)
		if !ok || tok.t != tIdent || tok.v != name {
			return false
		}
	}
	return true
}

func (p *parser) isStatement(names ...string) bool {
	a, ok1 := p.peek(0)
	b, ok2 := p.peek(1)
	if !ok1 || !ok2 || a.t != tOpenStmt || b.t != tIdent {
		return false
	}
	for _, n := range names {
		if b.v == n {
			return true
		}
	}
	return false
}

func (p *parser) expect(t tokType, what string) (token, error) {
	tok, ok := p.peek(0)
	p.pos++
	if !ok {
		return token{}, errors.New("expected " + what + ", got the end of the template")
	}
	if tok.t != t {
		return token{}, fmt.Errorf("expected %s, got %q", what, tok.v)
	}
	return tok, nil
}

func (p *parser) expectIdent(name string) error {
	if !p.isIdent(name) {
		return errors.New("expected " + name)
	}
	p.pos++
	return nil
}

// end reads {% name %}.
func (p *parser) end(name string) error {
	if _, err := p.expect(tOpenStmt, "{%"); err != nil {
		return err
	}
	if err := p.expectIdent(name); err != nil {
		return err
	}
	_, err := p.expect(tCloseStmt, "%}")
	return err
}

// until parses statements up to one of the names.
func (p *parser) until(names ...string) ([]node, error) {
	var body []node
	for !p.isStatement(names...) {
		if p.pos >= len(p.toks) {
			return nil, fmt.Errorf("expected {%% %s %%}, got the end of the template", strings.Join(names, " or "))
		}
		n, err := p.any()
		if err != nil {
			return nil, err
		}
		body = append(body, n)
	}
	return body, nil
}

func (p *parser) any() (node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	tok := p.toks[p.pos]
	switch tok.t {
	case tComment:
		p.pos++
		return &commentNode{}, nil
	case tText:
		p.pos++
		return &textNode{tok.v}, nil
	case tOpenStmt:
		return p.statement()
	case tOpenExpr:
		p.pos++
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		_, err = p.expect(tCloseExpr, "}}")
		return n, err
	}
	return nil, fmt.Errorf("unexpected %q", tok.v)
}

func (p *parser) statement() (node, error) {
	p.pos++ // {%
	tok, ok := p.peek(0)
	if !ok || tok.t != tIdent {
		return nil, errors.New("expected a statement after {%")
	}
	p.pos++
	switch tok.v {
	case "set":
		return p.set()
	case "if":
		n, err := p.ifStmt()
		if err != nil {
			return nil, err
		}
		return n, p.end("endif")
	case "macro":
		n, err := p.macro()
		if err != nil {
			return nil, err
		}
		return n, p.end("endmacro")
	case "for":
		n, err := p.forStmt()
		if err != nil {
			return nil, err
		}
		return n, p.end("endfor")
	case "call":
		var callerArgs []node
		if p.is(tOpenParen) {
			args, err := p.args(true)
			if err != nil {
				return nil, err
			}
			callerArgs = args
		}
		callee, err := p.primary()
		if err != nil {
			return nil, err
		}
		if _, ok := callee.(*ident); !ok {
			return nil, errors.New("expected an identifier after call")
		}
		args, err := p.args(false)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tCloseStmt, "%}"); err != nil {
			return nil, err
		}
		body, err := p.until("endcall")
		if err != nil {
			return nil, err
		}
		return &callStmt{&callExpr{callee, args}, callerArgs, body}, p.end("endcall")
	case "break", "continue":
		if _, err := p.expect(tCloseStmt, "%}"); err != nil {
			return nil, err
		}
		if tok.v == "break" {
			return &breakNode{}, nil
		}
		return &continueNode{}, nil
	case "filter":
		f, err := p.primary()
		if err != nil {
			return nil, err
		}
		if _, ok := f.(*ident); ok && p.is(tOpenParen) {
			if f, err = p.call(f); err != nil {
				return nil, err
			}
		}
		if _, err := p.expect(tCloseStmt, "%}"); err != nil {
			return nil, err
		}
		body, err := p.until("endfilter")
		if err != nil {
			return nil, err
		}
		return &filterStmt{f, body}, p.end("endfilter")
	}
	return nil, fmt.Errorf("unknown statement %q", tok.v)
}

func (p *parser) set() (node, error) {
	left, err := p.sequence(false)
	if err != nil {
		return nil, err
	}
	n := &setNode{assignee: left}
	if p.is(tEquals) {
		p.pos++
		if n.value, err = p.sequence(false); err != nil {
			return nil, err
		}
	} else {
		if _, err := p.expect(tCloseStmt, "%}"); err != nil {
			return nil, err
		}
		if n.body, err = p.until("endset"); err != nil {
			return nil, err
		}
		p.pos++ // {%
		if err := p.expectIdent("endset"); err != nil {
			return nil, err
		}
	}
	_, err = p.expect(tCloseStmt, "%}")
	return n, err
}

func (p *parser) ifStmt() (*ifNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	test, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tCloseStmt, "%}"); err != nil {
		return nil, err
	}
	n := &ifNode{test: test}
	if n.body, err = p.until("elif", "else", "endif"); err != nil {
		return nil, err
	}
	switch {
	case p.isStatement("elif"):
		p.pos += 2
		elif, err := p.ifStmt()
		if err != nil {
			return nil, err
		}
		n.alt = []node{elif}
	case p.isStatement("else"):
		p.pos += 2
		if _, err := p.expect(tCloseStmt, "%}"); err != nil {
			return nil, err
		}
		if n.alt, err = p.until("endif"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *parser) macro() (node, error) {
	name, err := p.primary()
	if err != nil {
		return nil, err
	}
	id, ok := name.(*ident)
	if !ok {
		return nil, errors.New("expected an identifier after macro")
	}
	params, err := p.args(true)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tCloseStmt, "%}"); err != nil {
		return nil, err
	}
	body, err := p.until("endmacro")
	if err != nil {
		return nil, err
	}
	return &macroNode{id.name, params, body}, nil
}

// sequence parses expressions separated by commas: a tuple when there is a
// comma.
func (p *parser) sequence(primary bool) (node, error) {
	next := p.expr
	if primary {
		next = p.primary
	}
	first, err := next()
	if err != nil {
		return nil, err
	}
	if !p.is(tComma) {
		return first, nil
	}
	items := []node{first}
	for {
		p.pos++
		n, err := next()
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		if !p.is(tComma) {
			return &tupleLit{items}, nil
		}
	}
}

func (p *parser) forStmt() (node, error) {
	loopvar, err := p.sequence(true)
	if err != nil {
		return nil, err
	}
	switch loopvar.(type) {
	case *ident, *tupleLit:
	default:
		return nil, errors.New("expected an identifier or a tuple as the loop variable")
	}
	if err := p.expectIdent("in"); err != nil {
		return nil, err
	}
	iterable, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tCloseStmt, "%}"); err != nil {
		return nil, err
	}
	n := &forNode{loopvar: loopvar, iterable: iterable}
	if n.body, err = p.until("endfor", "else"); err != nil {
		return nil, err
	}
	if p.isStatement("else") {
		p.pos += 2
		if _, err := p.expect(tCloseStmt, "%}"); err != nil {
			return nil, err
		}
		if n.alt, err = p.until("endfor"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// expr parses an expression: a ternary or a select (x if c).
func (p *parser) expr() (node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	a, err := p.or()
	if err != nil {
		return nil, err
	}
	if !p.isIdent("if") {
		return a, nil
	}
	p.pos++
	test, err := p.or()
	if err != nil {
		return nil, err
	}
	if !p.isIdent("else") {
		return &selectExpr{a, test}, nil
	}
	p.pos++
	f, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &ternary{test, a, f}, nil
}

func (p *parser) or() (node, error)  { return p.logical("or", p.and) }
func (p *parser) and() (node, error) { return p.logical("and", p.not) }

func (p *parser) logical(op string, next func() (node, error)) (node, error) {
	left, err := next()
	if err != nil {
		return nil, err
	}
	for p.isIdent(op) {
		p.pos++
		right, err := next()
		if err != nil {
			return nil, err
		}
		left = &binary{op, left, right}
	}
	return left, nil
}

func (p *parser) not() (node, error) {
	if !p.isIdent("not") {
		return p.comparison()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var n node
	for p.isIdent("not") {
		p.pos++
		arg, err := p.not()
		if err != nil {
			return nil, err
		}
		n = &unary{"not", arg}
	}
	return n, nil
}

func (p *parser) comparison() (node, error) {
	left, err := p.additive()
	if err != nil {
		return nil, err
	}
	for {
		var op string
		switch {
		case p.isIdent("not", "in"):
			op = "not in"
			p.pos += 2
		case p.isIdent("in"):
			op = "in"
			p.pos++
		case p.is(tCompare):
			op = p.toks[p.pos].v
			p.pos++
		default:
			return left, nil
		}
		right, err := p.additive()
		if err != nil {
			return nil, err
		}
		left = &binary{op, left, right}
	}
}

func (p *parser) binaryLevel(t tokType, next func() (node, error)) (node, error) {
	left, err := next()
	if err != nil {
		return nil, err
	}
	for p.is(t) {
		op := p.toks[p.pos].v
		p.pos++
		right, err := next()
		if err != nil {
			return nil, err
		}
		left = &binary{op, left, right}
	}
	return left, nil
}

func (p *parser) additive() (node, error)       { return p.binaryLevel(tAdd, p.multiplicative) }
func (p *parser) multiplicative() (node, error) { return p.binaryLevel(tMul, p.power) }
func (p *parser) power() (node, error)          { return p.binaryLevel(tPow, p.test) }

func (p *parser) test() (node, error) {
	operand, err := p.filter()
	if err != nil {
		return nil, err
	}
	for p.isIdent("is") {
		p.pos++
		negate := p.isIdent("not")
		if negate {
			p.pos++
		}
		t, err := p.primary()
		if err != nil {
			return nil, err
		}
		id, ok := t.(*ident)
		if !ok {
			return nil, errors.New("expected an identifier for the test")
		}
		operand = &testExpr{operand, negate, id.name}
	}
	return operand, nil
}

func (p *parser) filter() (node, error) {
	operand, err := p.unarySign()
	if err != nil {
		return nil, err
	}
	for p.is(tPipe) {
		p.pos++
		f, err := p.primary()
		if err != nil {
			return nil, err
		}
		if _, ok := f.(*ident); !ok {
			return nil, errors.New("expected an identifier for the filter")
		}
		if p.is(tOpenParen) {
			if f, err = p.call(f); err != nil {
				return nil, err
			}
		}
		operand = &filterExpr{operand, f}
	}
	return operand, nil
}

func (p *parser) unarySign() (node, error) {
	if tok, ok := p.peek(0); ok && (tok.t == tUnary || tok.t == tAdd) && (tok.v == "-" || tok.v == "+") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.pos++
		arg, err := p.unarySign()
		if err != nil {
			return nil, err
		}
		return &unary{tok.v, arg}, nil
	}
	prim, err := p.primary()
	if err != nil {
		return nil, err
	}
	m, err := p.member(prim)
	if err != nil {
		return nil, err
	}
	if p.is(tOpenParen) {
		return p.call(m)
	}
	return m, nil
}

func (p *parser) call(callee node) (node, error) {
	for {
		args, err := p.args(false)
		if err != nil {
			return nil, err
		}
		n, err := p.member(&callExpr{callee, args})
		if err != nil {
			return nil, err
		}
		if !p.is(tOpenParen) {
			return n, nil
		}
		callee = n
	}
}

// args parses a parenthesized list: call arguments, or a macro's
// parameters (params).
func (p *parser) args(params bool) ([]node, error) {
	if _, err := p.expect(tOpenParen, "("); err != nil {
		return nil, err
	}
	var args []node
	names := map[string]bool{}
	sawKeyword, sawSpread := false, false
	for !p.is(tCloseParen) {
		if p.pos >= len(p.toks) {
			return nil, errors.New("expected ), got the end of the template")
		}
		kwSpread := p.is(tPow)
		posSpread := p.is(tMul) && p.toks[p.pos].v == "*"
		if params && (kwSpread || posSpread) {
			return nil, errors.New("argument unpacking is not allowed in parameter declarations")
		}
		if kwSpread {
			p.pos++
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			args = append(args, &kwspread{e})
			if p.is(tComma) {
				p.pos++
			}
			if !p.is(tCloseParen) {
				return nil, errors.New("** must be applied to the last argument")
			}
			break
		}
		var arg node
		if posSpread {
			if sawSpread {
				return nil, errors.New("only one * argument unpacking is allowed")
			}
			sawSpread = true
			p.pos++
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			arg = &spread{e}
		} else {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			arg = e
			if p.is(tEquals) {
				p.pos++
				id, ok := e.(*ident)
				if !ok {
					return nil, errors.New("expected an identifier before =")
				}
				v, err := p.expr()
				if err != nil {
					return nil, err
				}
				arg = &kwarg{id.name, v}
			}
			if params {
				var name string
				switch a := arg.(type) {
				case *ident:
					name = a.name
				case *kwarg:
					name = a.key
				default:
					return nil, errors.New("expected an identifier for a parameter")
				}
				if names[name] {
					return nil, errors.New("duplicate parameter name: " + name)
				}
				names[name] = true
			}
			if _, ok := arg.(*kwarg); ok {
				sawKeyword = true
			} else if sawKeyword {
				return nil, errors.New("positional argument after a keyword argument")
			} else if sawSpread {
				return nil, errors.New("positional argument after * unpacking")
			}
		}
		args = append(args, arg)
		if p.is(tComma) {
			p.pos++
		}
	}
	_, err := p.expect(tCloseParen, ")")
	return args, err
}

// subscript parses what is inside [ ]: an expression or a slice.
func (p *parser) subscript() (node, error) {
	var parts []node
	isSlice := false
	for !p.is(tCloseSquare) {
		if p.pos >= len(p.toks) {
			return nil, errors.New("expected ], got the end of the template")
		}
		if p.is(tColon) {
			parts = append(parts, nil)
			p.pos++
			isSlice = true
			continue
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
		if p.is(tColon) {
			p.pos++
			isSlice = true
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("expected an index or a slice inside [ ]")
	}
	if !isSlice {
		return parts[0], nil
	}
	if len(parts) > 3 {
		return nil, errors.New("a slice takes 0 to 3 arguments")
	}
	parts = append(parts, nil, nil)
	return &sliceExpr{parts[0], parts[1], parts[2]}, nil
}

func (p *parser) member(obj node) (node, error) {
	for p.is(tDot) || p.is(tOpenSquare) {
		computed := p.is(tOpenSquare)
		p.pos++
		var prop node
		var err error
		if computed {
			if prop, err = p.subscript(); err != nil {
				return nil, err
			}
			if _, err := p.expect(tCloseSquare, "]"); err != nil {
				return nil, err
			}
		} else {
			if prop, err = p.primary(); err != nil {
				return nil, err
			}
			switch prop.(type) {
			case *ident, *intLit:
			default:
				return nil, errors.New("expected an identifier or an integer after a dot")
			}
		}
		obj = &member{obj, prop, computed}
	}
	return obj, nil
}

func (p *parser) primary() (node, error) {
	tok, ok := p.peek(0)
	if !ok {
		return nil, errors.New("unexpected end of the template")
	}
	p.pos++
	switch tok.t {
	case tNum:
		n, err := strconv.ParseFloat(tok.v, 64)
		if err != nil {
			return nil, err
		}
		if strings.Contains(tok.v, ".") {
			return &floatLit{n}, nil
		}
		return &intLit{n}, nil
	case tStr:
		s := tok.v
		for p.is(tStr) {
			s += p.toks[p.pos].v
			p.pos++
		}
		return &strLit{s}, nil
	case tIdent:
		return &ident{tok.v}, nil
	case tOpenParen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		e, err := p.sequence(false)
		if err != nil {
			return nil, err
		}
		_, err = p.expect(tCloseParen, ")")
		return e, err
	case tOpenSquare:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		var items []node
		for !p.is(tCloseSquare) {
			if p.pos >= len(p.toks) {
				return nil, errors.New("expected ], got the end of the template")
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			items = append(items, e)
			if p.is(tComma) {
				p.pos++
			}
		}
		p.pos++
		return &arrLit{items}, nil
	case tOpenCurly:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		o := &objLit{}
		for !p.is(tCloseCurly) {
			if p.pos >= len(p.toks) {
				return nil, errors.New("expected }, got the end of the template")
			}
			k, err := p.expr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tColon, ":"); err != nil {
				return nil, err
			}
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			o.keys, o.vals = append(o.keys, k), append(o.vals, v)
			if p.is(tComma) {
				p.pos++
			}
		}
		p.pos++
		return o, nil
	}
	return nil, fmt.Errorf("unexpected %q", tok.v)
}
