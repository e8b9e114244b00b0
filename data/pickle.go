package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// This file reads the subset of Python's pickle format that NumPy and the
// CIFAR-100 python version write: dicts, lists and tuples of numbers,
// strings and NumPy arrays (which pickle as a call of
// numpy.core.multiarray._reconstruct followed by a __setstate__ tuple). No
// code is run: globals and calls are kept as plain values for the caller to
// recognise. Every length is checked against the bytes that remain, so a
// hostile file costs at most memory proportional to its size.

// errPickle is wrapped by every error about a pickle that cannot be read.
var errPickle = errors.New("bad pickle")

// pyGlobal is a reference to a Python object by module and name.
type pyGlobal struct{ module, name string }

// pyCall is a call of fn with args (REDUCE or NEWOBJ), with the state a
// BUILD gave it, if any.
type pyCall struct {
	fn    any
	args  []any
	state any
}

// pyList is a Python list; a pointer, since APPEND changes it in place.
type pyList struct{ items []any }

// pyDict is a Python dict, its keys in the order they were set.
type pyDict struct {
	keys []any
	vals []any
}

// pyNone is Python's None.
type pyNone struct{}

// pyMark is the stack marker of MARK.
type pyMark struct{}

// Python values become: int64 (or *big.Int beyond), float64, bool, pyNone,
// string (str), []byte (Python 2 str and bytes), []any (tuple), *pyList,
// *pyDict, pyGlobal and *pyCall.

// unpickle decodes one pickle from b.
func unpickle(b []byte) (any, error) {
	var stack []any
	memo := map[uint32]any{}
	pos := 0
	fail := func(format string, args ...any) (any, error) {
		return nil, fmt.Errorf("%w: at byte %d: %s", errPickle, pos, fmt.Sprintf(format, args...))
	}
	take := func(n int) ([]byte, bool) {
		if n < 0 || n > len(b)-pos {
			return nil, false
		}
		s := b[pos : pos+n]
		pos += n
		return s, true
	}
	line := func() (string, bool) {
		for i := pos; i < len(b); i++ {
			if b[i] == '\n' {
				s := string(b[pos:i])
				pos = i + 1
				return s, true
			}
		}
		return "", false
	}
	pop := func() (any, bool) {
		if len(stack) == 0 {
			return nil, false
		}
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return v, true
	}
	// popMark pops everything above the topmost mark, and the mark.
	popMark := func() ([]any, bool) {
		for i := len(stack) - 1; i >= 0; i-- {
			if _, ok := stack[i].(pyMark); ok {
				items := append([]any(nil), stack[i+1:]...)
				stack = stack[:i]
				return items, true
			}
		}
		return nil, false
	}
	for {
		if pos >= len(b) {
			return fail("the pickle ends without STOP")
		}
		opAt := pos
		opc := b[pos]
		pos++
		var n int
		switch opc {
		case 0x80: // PROTO
			p, ok := take(1)
			if !ok || p[0] > 5 {
				return fail("bad protocol")
			}
			continue
		case 0x95: // FRAME: a hint only
			if _, ok := take(8); !ok {
				return fail("cut off")
			}
			continue
		case '.': // STOP
			v, ok := pop()
			if !ok {
				return fail("STOP on an empty stack")
			}
			return v, nil
		case '(':
			stack = append(stack, pyMark{})
			continue
		case ')':
			stack = append(stack, []any{})
			continue
		case ']':
			stack = append(stack, &pyList{})
			continue
		case '}':
			stack = append(stack, &pyDict{})
			continue
		case 'N':
			stack = append(stack, pyNone{})
			continue
		case 0x88, 0x89: // NEWTRUE, NEWFALSE
			stack = append(stack, opc == 0x88)
			continue
		case 'K': // BININT1
			v, ok := take(1)
			if !ok {
				return fail("cut off")
			}
			stack = append(stack, int64(v[0]))
			continue
		case 'M': // BININT2
			v, ok := take(2)
			if !ok {
				return fail("cut off")
			}
			stack = append(stack, int64(binary.LittleEndian.Uint16(v)))
			continue
		case 'J': // BININT
			v, ok := take(4)
			if !ok {
				return fail("cut off")
			}
			stack = append(stack, int64(int32(binary.LittleEndian.Uint32(v))))
			continue
		case 0x8a: // LONG1
			l, ok := take(1)
			if !ok {
				return fail("cut off")
			}
			v, ok := take(int(l[0]))
			if !ok {
				return fail("cut off")
			}
			stack = append(stack, pyLong(v))
			continue
		case 'G': // BINFLOAT
			v, ok := take(8)
			if !ok {
				return fail("cut off")
			}
			stack = append(stack, math.Float64frombits(binary.BigEndian.Uint64(v)))
			continue
		case 'U', 'C', 0x8c: // SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE
			l, ok := take(1)
			if !ok {
				return fail("cut off")
			}
			n = int(l[0])
		case 'T', 'B', 'X': // BINSTRING, BINBYTES, BINUNICODE
			l, ok := take(4)
			if !ok {
				return fail("cut off")
			}
			n = int(binary.LittleEndian.Uint32(l))
			if opc == 'T' && int32(n) < 0 {
				return fail("negative string length")
			}
		case 'c': // GLOBAL
			mod, ok1 := line()
			name, ok2 := line()
			if !ok1 || !ok2 {
				return fail("cut off")
			}
			stack = append(stack, pyGlobal{mod, name})
			continue
		case 0x93: // STACK_GLOBAL
			name, ok1 := pop()
			mod, ok2 := pop()
			ms, ok3 := mod.(string)
			ns, ok4 := name.(string)
			if !ok1 || !ok2 || !ok3 || !ok4 {
				return fail("STACK_GLOBAL needs two strings")
			}
			stack = append(stack, pyGlobal{ms, ns})
			continue
		case 'R', 0x81: // REDUCE, NEWOBJ
			args, ok1 := pop()
			fn, ok2 := pop()
			t, ok3 := args.([]any)
			if !ok1 || !ok2 || !ok3 {
				return fail("a call needs a callable and an argument tuple")
			}
			// Python 3 pickles bytes for protocol 2 as
			// _codecs.encode(text, "latin1"): that call is the bytes.
			if g, ok := fn.(pyGlobal); ok && g.module == "_codecs" && g.name == "encode" && len(t) == 2 {
				s, ok1 := t[0].(string)
				enc, ok2 := t[1].(string)
				if ok1 && ok2 && enc == "latin1" {
					if raw, ok := latin1(s); ok {
						stack = append(stack, raw)
						continue
					}
				}
			}
			stack = append(stack, &pyCall{fn: fn, args: t})
			continue
		case 'b': // BUILD
			state, ok1 := pop()
			if !ok1 || len(stack) == 0 {
				return fail("BUILD on a short stack")
			}
			c, ok := stack[len(stack)-1].(*pyCall)
			if !ok {
				return fail("BUILD on %T", stack[len(stack)-1])
			}
			c.state = state
			continue
		case 't': // TUPLE
			items, ok := popMark()
			if !ok {
				return fail("TUPLE without a mark")
			}
			stack = append(stack, items)
			continue
		case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
			k := int(opc-0x85) + 1
			if len(stack) < k {
				return fail("short stack for a tuple")
			}
			items := append([]any(nil), stack[len(stack)-k:]...)
			stack = append(stack[:len(stack)-k], items)
			continue
		case 'a', 'e': // APPEND, APPENDS
			var items []any
			if opc == 'a' {
				v, ok := pop()
				if !ok {
					return fail("APPEND on an empty stack")
				}
				items = []any{v}
			} else {
				var ok bool
				if items, ok = popMark(); !ok {
					return fail("APPENDS without a mark")
				}
			}
			if len(stack) == 0 {
				return fail("no list to append to")
			}
			l, ok := stack[len(stack)-1].(*pyList)
			if !ok {
				return fail("appending to %T", stack[len(stack)-1])
			}
			l.items = append(l.items, items...)
			continue
		case 's', 'u': // SETITEM, SETITEMS
			var items []any
			if opc == 's' {
				if len(stack) < 2 {
					return fail("SETITEM on a short stack")
				}
				items = append([]any(nil), stack[len(stack)-2:]...)
				stack = stack[:len(stack)-2]
			} else {
				var ok bool
				if items, ok = popMark(); !ok || len(items)%2 != 0 {
					return fail("SETITEMS without a mark or with an odd number of items")
				}
			}
			if len(stack) == 0 {
				return fail("no dict to set items in")
			}
			d, ok := stack[len(stack)-1].(*pyDict)
			if !ok {
				return fail("setting items in %T", stack[len(stack)-1])
			}
			for i := 0; i < len(items); i += 2 {
				d.keys = append(d.keys, items[i])
				d.vals = append(d.vals, items[i+1])
			}
			continue
		case 'q', 'r', 0x94: // BINPUT, LONG_BINPUT, MEMOIZE
			var k uint32
			switch opc {
			case 'q':
				v, ok := take(1)
				if !ok {
					return fail("cut off")
				}
				k = uint32(v[0])
			case 'r':
				v, ok := take(4)
				if !ok {
					return fail("cut off")
				}
				k = binary.LittleEndian.Uint32(v)
			default:
				k = uint32(len(memo))
			}
			if len(stack) == 0 {
				return fail("memoizing on an empty stack")
			}
			memo[k] = stack[len(stack)-1]
			continue
		case 'h', 'j': // BINGET, LONG_BINGET
			var k uint32
			if opc == 'h' {
				v, ok := take(1)
				if !ok {
					return fail("cut off")
				}
				k = uint32(v[0])
			} else {
				v, ok := take(4)
				if !ok {
					return fail("cut off")
				}
				k = binary.LittleEndian.Uint32(v)
			}
			v, ok := memo[k]
			if !ok {
				return fail("memo %d is not set", k)
			}
			stack = append(stack, v)
			continue
		default:
			pos = opAt
			return fail("opcode 0x%02x (%s) is not supported", opc, strconv.QuoteRune(rune(opc)))
		}
		// The string opcodes: n bytes follow.
		s, ok := take(n)
		if !ok {
			return fail("a string of %d bytes, but %d bytes remain", n, len(b)-pos)
		}
		switch opc {
		case 'X', 0x8c:
			stack = append(stack, string(s))
		default:
			stack = append(stack, s)
		}
	}
}

// pyLong decodes LONG1's little-endian two's-complement bytes.
func pyLong(v []byte) any {
	if len(v) == 0 {
		return int64(0)
	}
	if len(v) <= 8 {
		var u uint64
		for i := len(v) - 1; i >= 0; i-- {
			u = u<<8 | uint64(v[i])
		}
		shift := uint(64 - 8*len(v))
		return int64(u<<shift) >> shift
	}
	be := make([]byte, len(v))
	for i := range v {
		be[len(v)-1-i] = v[i]
	}
	x := new(big.Int).SetBytes(be)
	if v[len(v)-1]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return x
}

// pyText returns a Python 2 str, bytes or str value as a Go string.
func pyText(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	}
	return "", false
}

// get returns the value of a dict's key, given as text.
func (d *pyDict) get(key string) (any, bool) {
	for i, k := range d.keys {
		if s, ok := pyText(k); ok && s == key {
			return d.vals[i], true
		}
	}
	return nil, false
}

// pyArray is a NumPy array decoded from its pickle: its shape, its dtype's
// descriptor with byte order ("|u1", "<i8", "|O") and its data, raw bytes
// for a numeric dtype or the objects of an object array.
type pyArray struct {
	shape   []int
	descr   string
	raw     []byte
	objects []any
}

// numpyArray recognises the pickle of a NumPy array.
func numpyArray(v any) (*pyArray, error) {
	c, ok := v.(*pyCall)
	if !ok {
		return nil, fmt.Errorf("%w: want a NumPy array, got %s", errPickle, pyKind(v))
	}
	if g, ok := c.fn.(pyGlobal); !ok || g.name != "_reconstruct" || (g.module != "numpy.core.multiarray" && g.module != "numpy._core.multiarray") {
		return nil, fmt.Errorf("%w: want a NumPy array, got a call of %s", errPickle, pyKind(c.fn))
	}
	st, ok := c.state.([]any)
	if !ok || len(st) != 5 {
		return nil, fmt.Errorf("%w: a NumPy array's state is not a 5-tuple", errPickle)
	}
	a := &pyArray{}
	dims, ok := st[1].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: a NumPy array's shape is not a tuple", errPickle)
	}
	size := int64(1)
	for _, d := range dims {
		n, ok := d.(int64)
		if !ok || n < 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("%w: bad NumPy array dimension %v", errPickle, d)
		}
		a.shape = append(a.shape, int(n))
		size *= n
		if size > math.MaxInt32 {
			return nil, fmt.Errorf("%w: NumPy array of shape %v is too large", errPickle, dims)
		}
	}
	dt, ok := st[2].(*pyCall)
	if !ok {
		return nil, fmt.Errorf("%w: a NumPy array's dtype is %s, not numpy.dtype", errPickle, pyKind(st[2]))
	}
	if g, isG := dt.fn.(pyGlobal); !isG || g.name != "dtype" || len(dt.args) < 1 {
		return nil, fmt.Errorf("%w: a NumPy array's dtype is not numpy.dtype", errPickle)
	}
	name, ok := pyText(dt.args[0])
	if !ok {
		return nil, fmt.Errorf("%w: a NumPy dtype's name is not text", errPickle)
	}
	order := "|"
	if ds, ok := dt.state.([]any); ok && len(ds) > 1 {
		if o, ok := pyText(ds[1]); ok {
			order = o
		}
	}
	if fortran, _ := st[3].(bool); fortran && len(a.shape) > 1 {
		return nil, fmt.Errorf("%w: Fortran-ordered NumPy arrays are not supported", errPickle)
	}
	switch name {
	case "O8", "O4", "O":
		a.descr = "|O"
		l, ok := st[4].(*pyList)
		if !ok || int64(len(l.items)) != size {
			return nil, fmt.Errorf("%w: an object array of shape %v does not hold %d objects", errPickle, a.shape, size)
		}
		a.objects = l.items
	default:
		a.descr = order + name
		raw, ok := st[4].([]byte)
		if !ok {
			if s, isS := st[4].(string); isS {
				// Python 3 pickles of Python 2 data carry bytes as latin-1 text.
				raw, ok = latin1(s)
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: a NumPy array's data is not bytes", errPickle)
		}
		a.raw = raw
	}
	return a, nil
}

// latin1 turns text whose characters are all below 256 into bytes.
func latin1(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 255 {
			return nil, false
		}
		out = append(out, byte(r))
	}
	return out, true
}

// pyKind names the kind of a decoded value for messages.
func pyKind(v any) string {
	switch x := v.(type) {
	case int64, *big.Int:
		return "an int"
	case float64:
		return "a float"
	case bool:
		return "a bool"
	case pyNone:
		return "None"
	case string, []byte:
		return "a string"
	case []any:
		return "a tuple"
	case *pyList:
		return "a list"
	case *pyDict:
		return "a dict"
	case pyGlobal:
		return x.module + "." + x.name
	case *pyCall:
		return "a call of " + pyKind(x.fn)
	}
	return fmt.Sprintf("%T", v)
}
