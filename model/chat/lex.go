package chat

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

type tokType uint8

const (
	tText tokType = iota
	tNum
	tStr
	tIdent
	tEquals
	tOpenParen
	tCloseParen
	tOpenStmt
	tCloseStmt
	tOpenExpr
	tCloseExpr
	tOpenSquare
	tCloseSquare
	tOpenCurly
	tCloseCurly
	tComma
	tDot
	tColon
	tPipe
	tAdd     // + - ~
	tMul     // * / // %
	tPow     // **
	tCompare // < > <= >= == !=
	tUnary   // - + before an operand
	tComment
)

type token struct {
	t tokType
	v string
}

// operators in the order they are tried, longest first where one is the
// prefix of another.
var operators = []struct {
	s string
	t tokType
}{
	{"{%", tOpenStmt}, {"%}", tCloseStmt}, {"{{", tOpenExpr}, {"}}", tCloseExpr},
	{"(", tOpenParen}, {")", tCloseParen}, {"{", tOpenCurly}, {"}", tCloseCurly},
	{"[", tOpenSquare}, {"]", tCloseSquare}, {",", tComma}, {".", tDot}, {":", tColon}, {"|", tPipe},
	{"<=", tCompare}, {">=", tCompare}, {"==", tCompare}, {"!=", tCompare}, {"<", tCompare}, {">", tCompare},
	{"+", tAdd}, {"-", tAdd}, {"~", tAdd}, {"**", tPow}, {"*", tMul}, {"//", tMul}, {"/", tMul}, {"%", tMul},
	{"=", tEquals},
}

var errEOF = errors.New("unexpected end of input")

// preprocess applies the renderer's source rewrites: one trailing newline
// dropped, lstrip_blocks, trim_blocks, and {% generation %} tags removed.
func preprocess(src string) string {
	src = strings.TrimSuffix(src, "\n")
	// lstrip_blocks: spaces and tabs at the start of a line before {%, {# or {-.
	var b strings.Builder
	lineStart := true
	for i := 0; i < len(src); {
		if lineStart {
			j := i
			for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
				j++
			}
			if j+1 < len(src) && src[j] == '{' && strings.IndexByte("#%-", src[j+1]) >= 0 {
				i = j
			}
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		b.WriteString(src[i : i+n])
		i += n
		lineStart = r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029
	}
	src = b.String()
	// trim_blocks: the newline after %}, #} or -}.
	b.Reset()
	for i := 0; i < len(src); i++ {
		b.WriteByte(src[i])
		if strings.IndexByte("#%-", src[i]) >= 0 && i+2 < len(src) && src[i+1] == '}' && src[i+2] == '\n' {
			b.WriteByte('}')
			i += 2
		}
	}
	return removeGeneration(b.String())
}

// removeGeneration drops {% generation %} and {% endgeneration %} with the
// whitespace around them that their - markers strip.
func removeGeneration(src string) string {
	if !strings.Contains(src, "generation") {
		return src
	}
	var b strings.Builder
	last := 0 // end of the previous match
	for i := 0; i+1 < len(src); i++ {
		if src[i] != '{' || src[i+1] != '%' {
			continue
		}
		j := i + 2
		lstrip := j < len(src) && src[j] == '-'
		if lstrip {
			j++
		}
		j = skipSpace(src, j)
		if strings.HasPrefix(src[j:], "endgeneration") {
			j += len("end")
		}
		if !strings.HasPrefix(src[j:], "generation") {
			continue
		}
		j = skipSpace(src, j+len("generation"))
		rstrip := j < len(src) && src[j] == '-'
		if rstrip {
			j++
		}
		if !strings.HasPrefix(src[j:], "%}") {
			continue
		}
		j += 2
		start := i
		for start > last {
			r, n := utf8.DecodeLastRuneInString(src[last:start])
			if !isJSSpace(r) {
				break
			}
			start -= n
		}
		end := skipSpace(src, j)
		b.WriteString(src[last:start])
		if !lstrip {
			b.WriteString(src[start:i])
		}
		if !rstrip {
			b.WriteString(src[j:end])
		}
		last = end
		i = end - 1
	}
	b.WriteString(src[last:])
	return b.String()
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			break
		}
		i += n
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// tokenize splits a preprocessed template into tokens.
func tokenize(src string) ([]token, error) {
	var toks []token
	pos, curly := 0, 0
	at := func(i int) byte {
		if i < len(src) {
			return src[i]
		}
		return 0
	}
	last := func() (tokType, bool) {
		if len(toks) == 0 {
			return 0, false
		}
		return toks[len(toks)-1].t, true
	}
	stripTrailing := func() {
		if t, ok := last(); ok && t == tText {
			v := trimRightJS(toks[len(toks)-1].v)
			if v == "" {
				toks = toks[:len(toks)-1]
			} else {
				toks[len(toks)-1].v = v
			}
		}
	}
	// consume reads while pred holds, decoding escapes; reaching the end
	// of the source is an error.
	consume := func(pred func(byte) bool) (string, error) {
		var b strings.Builder
		for pos < len(src) && pred(src[pos]) {
			if src[pos] == '\\' {
				pos++
				if pos >= len(src) {
					return "", errEOF
				}
				c := src[pos]
				pos++
				if c == 'x' || c == 'u' {
					n := 2
					if c == 'u' {
						n = 4
					}
					if pos+n > len(src) {
						return "", errors.New("invalid hexadecimal escape sequence")
					}
					u, err := strconv.ParseUint(src[pos:pos+n], 16, 16)
					if err != nil || strings.ContainsAny(src[pos:pos+n], "+-_") {
						return "", errors.New("invalid hexadecimal escape sequence")
					}
					pos += n
					r := rune(u)
					if utf16.IsSurrogate(r) && r < 0xdc00 && pos+6 <= len(src) && src[pos] == '\\' && src[pos+1] == 'u' {
						if u2, err := strconv.ParseUint(src[pos+2:pos+6], 16, 16); err == nil && u2 >= 0xdc00 && u2 < 0xe000 {
							r = utf16.DecodeRune(r, rune(u2))
							pos += 6
						}
					}
					b.WriteRune(r)
					continue
				}
				e, ok := map[byte]string{'n': "\n", 't': "\t", 'r': "\r", 'b': "\b", 'f': "\f", 'v': "\v", '\'': "'", '"': "\"", '\\': "\\"}[c]
				if !ok {
					return "", errors.New("unexpected escaped character: " + string(c))
				}
				b.WriteString(e)
				continue
			}
			b.WriteByte(src[pos])
			pos++
			if pos >= len(src) {
				return "", errEOF
			}
		}
		return b.String(), nil
	}
	spaceAt := func() bool {
		r, _ := utf8.DecodeRuneInString(src[pos:])
		return pos < len(src) && isJSSpace(r)
	}
	skipSpaces := func() error {
		for pos < len(src) && spaceAt() {
			_, n := utf8.DecodeRuneInString(src[pos:])
			pos += n
			if pos >= len(src) {
				return errEOF
			}
		}
		return nil
	}
main:
	for pos < len(src) {
		if t, ok := last(); !ok || t == tCloseStmt || t == tCloseExpr || t == tComment {
			start := pos
			for pos < len(src) && !(src[pos] == '{' && (at(pos+1) == '%' || at(pos+1) == '{' || at(pos+1) == '#')) {
				pos++
			}
			if pos > start {
				toks = append(toks, token{tText, src[start:pos]})
				continue
			}
		}
		if src[pos] == '{' && at(pos+1) == '#' {
			pos += 2
			stripBefore := at(pos) == '-'
			if stripBefore {
				pos++
			}
			end := strings.Index(src[pos:], "#}")
			if end < 0 || pos+end+2 > len(src) {
				return nil, errors.New("missing end of comment tag")
			}
			comment := src[pos : pos+end]
			stripAfter := strings.HasSuffix(comment, "-")
			if stripBefore {
				stripTrailing()
			}
			toks = append(toks, token{tComment, strings.TrimSuffix(comment, "-")})
			pos += end + 2
			if stripAfter {
				pos = skipSpace(src, pos)
			}
			continue
		}
		if strings.HasPrefix(src[pos:], "{%-") {
			stripTrailing()
			toks = append(toks, token{tOpenStmt, "{%"})
			pos += 3
			continue
		}
		if strings.HasPrefix(src[pos:], "{{-") {
			stripTrailing()
			toks = append(toks, token{tOpenExpr, "{{"})
			curly = 0
			pos += 3
			continue
		}
		if err := skipSpaces(); err != nil {
			return nil, err
		}
		if strings.HasPrefix(src[pos:], "-%}") {
			toks = append(toks, token{tCloseStmt, "%}"})
			pos = skipSpace(src, pos+3)
			continue
		}
		if strings.HasPrefix(src[pos:], "-}}") {
			toks = append(toks, token{tCloseExpr, "}}"})
			pos = skipSpace(src, pos+3)
			continue
		}
		c := src[pos]
		if c == '-' || c == '+' {
			t, ok := last()
			if !ok || t == tText {
				return nil, errors.New("unexpected character: " + string(c))
			}
			switch t {
			case tIdent, tNum, tStr, tCloseParen, tCloseSquare:
			default:
				pos++
				num, err := consume(isDigit)
				if err != nil {
					return nil, err
				}
				if num != "" && at(pos) == '.' && isDigit(at(pos+1)) {
					pos++
					frac, err := consume(isDigit)
					if err != nil {
						return nil, err
					}
					num += "." + frac
				}
				if num != "" {
					toks = append(toks, token{tNum, string(c) + num})
				} else {
					toks = append(toks, token{tUnary, string(c)})
				}
				continue
			}
		}
		for _, op := range operators {
			if op.s == "}}" && curly > 0 {
				continue
			}
			if strings.HasPrefix(src[pos:], op.s) {
				toks = append(toks, token{op.t, op.s})
				switch op.t {
				case tOpenExpr:
					curly = 0
				case tOpenCurly:
					curly++
				case tCloseCurly:
					curly--
				}
				pos += len(op.s)
				continue main
			}
		}
		switch {
		case c == '\'' || c == '"':
			pos++
			s, err := consume(func(b byte) bool { return b != c })
			if err != nil {
				return nil, err
			}
			if pos >= len(src) {
				return nil, errEOF
			}
			toks = append(toks, token{tStr, s})
			pos++
		case isDigit(c):
			num, err := consume(isDigit)
			if err != nil {
				return nil, err
			}
			if t, _ := last(); t != tDot && at(pos) == '.' && isDigit(at(pos+1)) {
				pos++
				frac, err := consume(isDigit)
				if err != nil {
					return nil, err
				}
				num += "." + frac
			}
			toks = append(toks, token{tNum, num})
		case isWordByte(c):
			w, err := consume(isWordByte)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tIdent, w})
		default:
			r, _ := utf8.DecodeRuneInString(src[pos:])
			return nil, errors.New("unexpected character: " + string(r))
		}
	}
	return toks, nil
}
