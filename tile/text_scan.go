package tile

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The textual form is read by a scanner that the parser drives one token at a
// time, so that the parser can choose how to read a name: where a tensor name
// is expected, a name may contain '/' and '.' between identifier characters
// (conv/kernel, block.1); elsewhere identifiers are plain ([A-Za-z_][A-Za-z0-9_]*)
// and '/' and '.' are operators. Any name may also be written as a Go-quoted
// string, which is how the printer writes names that are not bare names.

// tokKind is the class of a token.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tNewline         // end of a statement
	tIdent           // plain identifier
	tNumber          // decimal number, integer or floating-point
	tString          // quoted string; text holds the unquoted value
	tPunct           // one of [ ] ( ) , : = + - * / < > ? and ==
)

// token is one lexical element; off is its byte offset in the source.
type token struct {
	kind tokKind
	off  int
	text string
}

// syntaxError is how the parser abandons its input: it is raised with panic
// and recovered by the entry points, which turn it into an *Error.
type syntaxError struct {
	off int
	msg string
}

// scanner reads tokens from src on demand.
type scanner struct {
	src string
	off int   // where the next token starts to be scanned
	tok token // the current (lookahead) token
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentChar(c byte) bool { return isLetter(c) || isDigit(c) }

// fail abandons the parse with an error at byte offset off.
func (s *scanner) fail(off int, format string, args ...any) {
	panic(syntaxError{off, fmt.Sprintf(format, args...)})
}

// position returns the 1-based line and column (in bytes) of offset off.
func position(src string, off int) (line, col int) {
	off = min(off, len(src))
	line = 1 + strings.Count(src[:off], "\n")
	col = off - strings.LastIndexByte(src[:off], '\n')
	return line, col
}

// next scans the token after the current one in plain mode.
func (s *scanner) next() {
	src := s.src
	for s.off < len(src) {
		c := src[s.off]
		if c == ' ' || c == '\t' || c == '\r' {
			s.off++
		} else if c == '#' {
			for s.off < len(src) && src[s.off] != '\n' {
				s.off++
			}
		} else {
			break
		}
	}
	start := s.off
	if start == len(src) {
		s.tok = token{tEOF, start, ""}
		return
	}
	c := src[start]
	kind := tPunct
	switch {
	case c == '\n':
		s.off++
		kind = tNewline
	case isLetter(c):
		for s.off < len(src) && isIdentChar(src[s.off]) {
			s.off++
		}
		kind = tIdent
	case isDigit(c):
		s.off = scanNumber(src, start)
		kind = tNumber
	case c == '"':
		s.tok = token{tString, start, s.scanString(start)}
		return
	case c == '=' && start+1 < len(src) && src[start+1] == '=':
		s.off += 2
	case strings.IndexByte("[](),:=+-*/<>?", c) >= 0:
		s.off++
	default:
		r, _ := utf8.DecodeRuneInString(src[start:])
		s.fail(start, "unexpected character %q", r)
	}
	s.tok = token{kind, start, src[start:s.off]}
}

// scanNumber returns the end of the decimal number starting at off: digits,
// an optional fraction and an optional exponent.
func scanNumber(src string, off int) int {
	digits := func(i int) int {
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		return i
	}
	off = digits(off)
	if off < len(src) && src[off] == '.' {
		off = digits(off + 1)
	}
	if off < len(src) && (src[off] == 'e' || src[off] == 'E') {
		i := off + 1
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i < len(src) && isDigit(src[i]) {
			off = digits(i)
		}
	}
	return off
}

// scanString scans the Go-quoted string starting at off, sets s.off past it
// and returns its value.
func (s *scanner) scanString(off int) string {
	i := off + 1
	for {
		if i >= len(s.src) || s.src[i] == '\n' {
			s.fail(off, "unterminated string")
		}
		if s.src[i] == '\\' {
			i += 2
			continue
		}
		if s.src[i] == '"' {
			break
		}
		i++
	}
	v, err := strconv.Unquote(s.src[off : i+1])
	if err != nil {
		s.fail(off, "malformed string %s", s.src[off:i+1])
	}
	s.off = i + 1
	return v
}

// scanName returns the end of the bare name starting at off: identifier
// characters, and '/' or '.' where an identifier character follows.
func scanName(src string, off int) int {
	for off < len(src) {
		c := src[off]
		switch {
		case isIdentChar(c):
			off++
		case (c == '/' || c == '.') && off+1 < len(src) && isIdentChar(src[off+1]):
			off += 2
		default:
			return off
		}
	}
	return off
}

// isBareName reports whether name can be written without quotes: it is read
// back whole as a bare name.
func isBareName(name string) bool {
	return name != "" && isLetter(name[0]) && scanName(name, 0) == len(name)
}

// quoteName returns name as the textual form writes it: bare when possible,
// quoted otherwise.
func quoteName(name string) string {
	if isBareName(name) {
		return name
	}
	return strconv.Quote(name)
}

// describeTok names the current token for error messages.
func (s *scanner) describeTok() string {
	switch s.tok.kind {
	case tEOF:
		return "end of input"
	case tNewline:
		return "end of line"
	case tString:
		return strconv.Quote(s.tok.text)
	}
	return fmt.Sprintf("%q", s.tok.text)
}

// is reports whether the current token is the punctuation p.
func (s *scanner) is(p string) bool { return s.tok.kind == tPunct && s.tok.text == p }

// accept consumes the punctuation p if it is the current token.
func (s *scanner) accept(p string) bool {
	if s.is(p) {
		s.next()
		return true
	}
	return false
}

// expect consumes the punctuation p and returns its offset, or fails.
func (s *scanner) expect(p string, what string) int {
	off := s.tok.off
	if !s.accept(p) {
		s.fail(off, "expected '%s' %s, found %s", p, what, s.describeTok())
	}
	return off
}

// ident consumes a plain identifier.
func (s *scanner) ident(what string) string {
	if s.tok.kind != tIdent {
		s.fail(s.tok.off, "expected %s, found %s", what, s.describeTok())
	}
	id := s.tok.text
	s.next()
	return id
}

// name consumes a tensor, output or graph name: a bare name or a quoted
// string.
func (s *scanner) name(what string) string {
	switch s.tok.kind {
	case tString:
		n := s.tok.text
		s.next()
		return n
	case tIdent:
		end := scanName(s.src, s.tok.off)
		n := s.src[s.tok.off:end]
		s.off = end
		s.next()
		return n
	}
	s.fail(s.tok.off, "expected %s, found %s", what, s.describeTok())
	return ""
}

// endStatement consumes the newline (or end of input) that ends a statement.
func (s *scanner) endStatement() {
	switch s.tok.kind {
	case tNewline:
		s.next()
	case tEOF:
	default:
		s.fail(s.tok.off, "expected end of statement, found %s", s.describeTok())
	}
}

// skipNewlines consumes blank lines.
func (s *scanner) skipNewlines() {
	for s.tok.kind == tNewline {
		s.next()
	}
}

// intLit consumes an unsigned integer literal.
func (s *scanner) intLit(what string) int {
	if s.tok.kind != tNumber {
		s.fail(s.tok.off, "expected %s, found %s", what, s.describeTok())
	}
	n, err := strconv.Atoi(s.tok.text)
	if err != nil {
		s.fail(s.tok.off, "expected %s, found %s (not an integer in range)", what, s.describeTok())
	}
	s.next()
	return n
}

// integer consumes an integer literal with an optional minus sign.
func (s *scanner) integer(what string) int {
	if s.accept("-") {
		return -s.intLit(what)
	}
	return s.intLit(what)
}

// intList consumes "[i, j, …]" of integers with optional minus signs.
func (s *scanner) intList(what string) []int {
	s.expect("[", "to open "+what)
	list := []int{}
	if s.accept("]") {
		return list
	}
	for {
		list = append(list, s.integer("an integer in "+what))
		if !s.accept(",") {
			break
		}
	}
	s.expect("]", "to close "+what)
	return list
}

// shape consumes a shape "[d, …]" of non-negative dimensions whose element
// count fits in an int.
func (s *scanner) shape(what string) Shape {
	off := s.tok.off
	dims := s.intList(what)
	n := 1
	for _, d := range dims {
		var ok bool
		if n, ok = mulInt(n, d); d < 0 || !ok {
			s.fail(off, "bad %s %v: dimensions must be non-negative with a product that fits in an int", what, Shape(dims))
		}
	}
	return Shape(dims)
}

// dtype consumes a dtype name.
func (s *scanner) dtype() DType {
	off := s.tok.off
	name := s.ident("a dtype")
	dt, err := ParseDType(name)
	if err != nil {
		s.fail(off, "unknown dtype %q (want one of bool, i32, i64, f16, bf16, f32, f64)", name)
	}
	return dt
}

// tensorType consumes "dtype[dims]".
func (s *scanner) tensorType() (DType, Shape) {
	dt := s.dtype()
	return dt, s.shape("shape")
}

// number consumes a floating-point number with an optional sign: a decimal
// literal, inf, nan, true (1) or false (0).
func (s *scanner) number(what string) float64 {
	neg := false
	if s.accept("-") {
		neg = true
	} else {
		s.accept("+")
	}
	var x float64
	switch {
	case s.tok.kind == tNumber:
		v, err := strconv.ParseFloat(s.tok.text, 64)
		if err != nil && !isRangeErr(err) {
			s.fail(s.tok.off, "malformed number %s", s.tok.text)
		}
		x = v
	case s.tok.kind == tIdent && s.tok.text == "inf":
		x = math.Inf(1)
	case s.tok.kind == tIdent && s.tok.text == "nan":
		x = math.NaN()
	case s.tok.kind == tIdent && s.tok.text == "true" && !neg:
		x = 1
	case s.tok.kind == tIdent && s.tok.text == "false" && !neg:
		x = 0
	default:
		s.fail(s.tok.off, "expected %s, found %s", what, s.describeTok())
	}
	s.next()
	if neg {
		x = -x
	}
	return x
}

// isRangeErr reports whether a strconv error only says the value overflowed
// or underflowed, in which case ParseFloat returns ±Inf or 0 as wanted.
func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// formatNumber writes x, an element of dtype dt, so that number reads it back
// exactly: floats in the shortest form that round-trips at their precision,
// integers below 1e21 with all their digits, booleans as true or false.
func formatNumber(dt DType, x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case dt == Bool:
		return strconv.FormatBool(x != 0)
	case dt.IsInt() && math.Abs(x) < 1e21:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case dt.IsInt() || dt == Float64 || float64(float32(x)) != x:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', -1, 32)
}

// mulInt returns a·b and whether it fits in an int without reaching
// math.MinInt, which keeps every value the parser computes negatable.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(absU(a), absU(b))
	if hi != 0 || lo > math.MaxInt {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		return -int(lo), true
	}
	return int(lo), true
}

// addInt returns a+b and whether it fits in an int without reaching
// math.MinInt.
func addInt(a, b int) (int, bool) {
	c := a + b
	if (b > 0 && c < a) || (b < 0 && c > a) || c == math.MinInt {
		return 0, false
	}
	return c, true
}

func absU(a int) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}

// uint64 consumes an unsigned 64-bit integer literal.
func (s *scanner) uint64(what string) uint64 {
	if s.tok.kind != tNumber {
		s.fail(s.tok.off, "expected %s, found %s", what, s.describeTok())
	}
	n, err := strconv.ParseUint(s.tok.text, 10, 64)
	if err != nil {
		s.fail(s.tok.off, "expected %s, found %s (not an unsigned 64-bit integer)", what, s.describeTok())
	}
	s.next()
	return n
}
