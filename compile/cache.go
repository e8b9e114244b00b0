package compile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// CompilerVersion is mixed into every cache key; change it whenever the
// compiler's output for some graph changes, or the format of cache entries
// does, so that stale programs are never loaded.
const CompilerVersion = "tartan-compile/12"

// CompileCached is Compile with an on-disk cache. Programs are stored under
// $XDG_CACHE_HOME/tartan/programs (~/.cache/tartan when XDG_CACHE_HOME is
// unset), keyed by a SHA-256 of the compiler version, the device key (which
// should name the device and its driver version), the target and a canonical
// encoding of the graph. hit reports whether the program came from the
// cache.
//
// Entries are written to a temporary file and renamed into place, so readers
// never see a partial entry. Each entry carries its key, its length and a
// SHA-256 of its whole contents (see encodeEntry); before a cached program is
// used, the checksum, the key, the program's validity and its inputs,
// variables and outputs (which must be the graph's) are checked. An entry
// that fails any check is damaged: it is reported once per process as a
// warning on standard error, removed, and the program is compiled again and
// rewritten. Failing to write the cache does not fail compilation.
// TARTAN_CACHE=off disables the cache.
func CompileCached(g *tile.Graph, t Target, deviceKey string) (p *kir.Program, hit bool, err error) {
	dbg := debugFromEnv()
	if os.Getenv("TARTAN_CACHE") == "off" {
		p, err = Compile(g, t)
		return p, false, err
	}
	st := &stats{}
	if err := st.timed("verify", func() error { return verify(g) }); err != nil {
		return nil, false, err
	}
	var key string
	st.timed("hash", func() error { key = cacheKey(g, t, deviceKey); return nil })
	dir, derr := cacheDir()
	var path string
	if derr == nil {
		path = filepath.Join(dir, "programs", key+".gob")
		var cached *kir.Program
		var lerr error
		st.timed("load", func() error { cached, lerr = loadEntry(path, key, g); return nil })
		if lerr != nil {
			warnDamaged(path, lerr)
			os.Remove(path)
		}
		if cached != nil {
			dbg.report(cached, st, true)
			return cached, true, nil
		}
	}
	p, cst, err := compileGraph(g, t)
	if err != nil {
		return nil, false, err
	}
	dbg.report(p, cst, false)
	if derr == nil {
		if werr := storeEntry(path, key, p); werr != nil && dbg.timing {
			debugMu.Lock()
			fmt.Fprintf(debugOut, "tartan compile %q: not cached: %v\n", p.Name, werr)
			debugMu.Unlock()
		}
	}
	return p, false, nil
}

// warnOut receives the warnings about damaged cache entries; tests replace
// it. warned holds the entries already reported by this process.
var (
	warnMu  sync.Mutex
	warnOut io.Writer = os.Stderr
	warned            = map[string]bool{}
)

// warnDamaged reports a damaged entry, once per process and path.
func warnDamaged(path string, err error) {
	warnMu.Lock()
	defer warnMu.Unlock()
	if warned[path] {
		return
	}
	warned[path] = true
	fmt.Fprintf(warnOut, "tartan: warning: compile cache entry %s is damaged (%v); it is removed and the program rebuilt\n", path, err)
}

// cacheDir returns $XDG_CACHE_HOME/tartan, or ~/.cache/tartan.
func cacheDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "tartan"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("compile: no cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "tartan"), nil
}

// cacheEntry is the body of a cache file, gob-encoded.
type cacheEntry struct {
	Version string
	Key     string
	Program *kir.Program
}

// A cache file is a header followed by the body:
//
//	entryMagic          the format, with its version
//	key                 the entry's key, 64 hexadecimal digits
//	length              the body's length in bytes, 8 bytes little-endian
//	checksum            SHA-256 of everything before it and of the body
//	body                the gob encoding of a cacheEntry
//
// The checksum covers every byte of the file but its own, so that any change
// is detected; the key is also stored inside the body.
const (
	entryMagic  = "TARTAN-PROGRAM-2\n"
	keyLen      = 2 * sha256.Size
	headerLen   = len(entryMagic) + keyLen + 8 + sha256.Size
	maxEntryLen = 1 << 30 // no program comes near; larger files are damaged
)

// loadEntry returns the program stored at path for key, after checking that
// it is the program of g. A missing entry gives nil and no error; any other
// failure to use the entry is returned.
func loadEntry(path, key string, g *tile.Graph) (*kir.Program, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > maxEntryLen {
		return nil, fmt.Errorf("not a regular file of at most %d bytes (%v, %d bytes)", maxEntryLen, info.Mode(), info.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEntryLen+1))
	if err != nil {
		return nil, err
	}
	p, err := decodeEntry(data, key)
	if err != nil {
		return nil, err
	}
	if err := matchGraph(p, g); err != nil {
		return nil, err
	}
	return p, nil
}

// encodeEntry returns the contents of the cache file of p under key.
func encodeEntry(key string, p *kir.Program) ([]byte, error) {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(cacheEntry{Version: CompilerVersion, Key: key, Program: p}); err != nil {
		return nil, err
	}
	return sealEntry(key, body.Bytes()), nil
}

// sealEntry puts the header for key in front of body.
func sealEntry(key string, body []byte) []byte {
	out := make([]byte, 0, headerLen+len(body))
	out = append(out, entryMagic...)
	out = append(out, key...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(body)))
	h := sha256.New()
	h.Write(out)
	h.Write(body)
	out = h.Sum(out)
	return append(out, body...)
}

// decodeEntry checks the contents of a cache file stored under key and
// returns its program: the header must be intact and name key, the checksum
// must match, and the body must decode to a valid program of this compiler
// version whose sizes fit in memory arithmetic.
func decodeEntry(data []byte, key string) (*kir.Program, error) {
	if len(data) < headerLen || string(data[:len(entryMagic)]) != entryMagic {
		return nil, fmt.Errorf("no entry header: %d bytes", len(data))
	}
	rest := data[len(entryMagic):]
	if got := string(rest[:keyLen]); got != key {
		return nil, fmt.Errorf("the entry is for key %q", got)
	}
	rest = rest[keyLen:]
	n := binary.LittleEndian.Uint64(rest)
	body := data[headerLen:]
	if n != uint64(len(body)) {
		return nil, fmt.Errorf("the header says %d bytes of program, the file holds %d", n, len(body))
	}
	h := sha256.New()
	h.Write(data[:headerLen-sha256.Size])
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), data[headerLen-sha256.Size:headerLen]) {
		return nil, errors.New("checksum mismatch")
	}
	var e cacheEntry
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&e); err != nil {
		return nil, fmt.Errorf("decoding the program: %w", err)
	}
	switch {
	case e.Version != CompilerVersion:
		return nil, fmt.Errorf("written by compiler %q, this is %q", e.Version, CompilerVersion)
	case e.Key != key:
		return nil, fmt.Errorf("the program inside is for key %q", e.Key)
	case e.Program == nil:
		return nil, errors.New("no program inside")
	}
	p := e.Program
	if err := checkSizes(p); err != nil {
		return nil, err
	}
	if err := relinkGEMM(p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// maxElems bounds the elements of one buffer or the points of one loop nest
// in a loaded program, and maxBytes the bytes of all its slots, so that
// sizes and byte counts computed from them never overflow.
const (
	maxElems = 1 << 56
	maxBytes = 1 << 60
)

// checkSizes rejects a program with nil parts, or whose shapes, slot sizes or
// loop ranges are negative or so large that element and byte counts
// computed from them would overflow; Validate assumes neither happens.
func checkSizes(p *kir.Program) error {
	size := func(what string, s tile.Shape) error {
		n := 1
		for _, d := range s {
			if d < 0 || d > maxElems || (d > 0 && n > maxElems/d) {
				return fmt.Errorf("program %q: %s has shape %v, too large", p.Name, what, s)
			}
			n *= d
		}
		return nil
	}
	if p.Slots < 0 || p.Slots != len(p.SlotBytes) {
		return fmt.Errorf("program %q has %d slots and %d slot sizes", p.Name, p.Slots, len(p.SlotBytes))
	}
	var total int
	for i, n := range p.SlotBytes {
		if n < 0 || n > maxBytes-total {
			return fmt.Errorf("program %q: slot %d has %d bytes (after %d in the slots before it)", p.Name, i, n, total)
		}
		total += n
	}
	for i, b := range p.Buffers {
		if b == nil {
			return fmt.Errorf("program %q: buffer %d is nil", p.Name, i)
		}
		if err := size(fmt.Sprintf("buffer b%d", i), b.Shape); err != nil {
			return err
		}
	}
	for i, k := range p.Kernels {
		if k == nil {
			return fmt.Errorf("program %q: kernel %d is nil", p.Name, i)
		}
		space := append(tile.Shape(nil), k.Shape...)
		for _, l := range k.Reduce {
			if l.Lo < -maxElems || l.Hi > maxElems || l.Hi < l.Lo {
				return fmt.Errorf("program %q: kernel %d (%s) has reduction loop %s over [%d, %d]", p.Name, i, k.Name, l.Name, l.Lo, l.Hi)
			}
			space = append(space, l.Hi-l.Lo+1)
		}
		if err := size(fmt.Sprintf("kernel %d (%s)", i, k.Name), space); err != nil {
			return err
		}
	}
	return nil
}

// matchGraph checks that p has the inputs, variables and outputs of g, in
// order, with their dtypes and shapes: a program that does not is not g's,
// whatever its key says.
func matchGraph(p *kir.Program, g *tile.Graph) error {
	type want struct {
		name  string
		dtype tile.DType
		shape tile.Shape
	}
	leaves := func(ts []*tile.Tensor) []want {
		var out []want
		for _, t := range ts {
			name := ""
			switch op := t.Op().(type) {
			case *tile.InputOp:
				name = op.Name
			case *tile.VariableOp:
				name = op.Name
			}
			out = append(out, want{name, t.DType(), t.Shape()})
		}
		return out
	}
	var outs []want
	for _, o := range g.Outputs() {
		outs = append(outs, want{o.Name, o.Tensor.DType(), o.Tensor.Shape()})
	}
	for _, c := range []struct {
		what string
		have []kir.Binding
		want []want
	}{{"input", p.Inputs, leaves(g.Inputs())}, {"variable", p.Variables, leaves(g.Variables())}, {"output", p.Outputs, outs}} {
		if len(c.have) != len(c.want) {
			return fmt.Errorf("program %q has %d %ss, graph %q has %d", p.Name, len(c.have), c.what, g.Name(), len(c.want))
		}
		for i, w := range c.want {
			b := p.Buffers[c.have[i].Buffer]
			if c.have[i].Name != w.name || b.DType != w.dtype || !b.Shape.Equal(w.shape) {
				return fmt.Errorf("program %q has %s %d %q %s%v, graph %q has %q %s%v",
					p.Name, c.what, i, c.have[i].Name, b.DType, b.Shape, g.Name(), w.name, w.dtype, w.shape)
			}
		}
	}
	if p.Name != g.Name() {
		return fmt.Errorf("program %q is not named after graph %q", p.Name, g.Name())
	}
	return nil
}

// relinkGEMM restores the GEMMView operand pointers into the kernel bodies,
// which encoding does not preserve: A is the argument of the body equal to
// the encoded A.
func relinkGEMM(p *kir.Program) error {
	for i, k := range p.Kernels {
		g := k.Schedule.GEMM
		if g == nil {
			continue
		}
		b := k.Body
		if b == nil || b.Op != kir.Apply || len(b.Args) != 2 || b.Args[0] == nil || b.Args[1] == nil || g.A == nil || g.B == nil {
			return fmt.Errorf("kernel %d (%s): gemm view without a product body", i, k.Name)
		}
		a0 := sameExpr(g.A, b.Args[0])
		g.A, g.B = b.Args[0], b.Args[1]
		if !a0 {
			g.A, g.B = g.B, g.A
		}
	}
	return nil
}

// sameExpr reports whether two expressions are equal node by node.
func sameExpr(a, b *kir.Expr) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Op != b.Op || a.DType != b.DType || a.Fn != b.Fn || a.Buf != b.Buf || a.OOB != b.OOB ||
		!(a.Value == b.Value || a.Value != a.Value && b.Value != b.Value) || a.Stream != b.Stream ||
		len(a.Args) != len(b.Args) || len(a.Index) != len(b.Index) {
		return false
	}
	for i := range a.Args {
		if !sameExpr(a.Args[i], b.Args[i]) {
			return false
		}
	}
	for i := range a.Index {
		if !sameIx(a.Index[i], b.Index[i]) {
			return false
		}
	}
	return true
}

func sameIx(a, b *kir.Ix) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Op == b.Op && a.Var == b.Var && a.C == b.C && sameIx(a.A, b.A) && sameIx(a.B, b.B) && sameExpr(a.E, b.E)
}

func storeEntry(path, key string, p *kir.Program) error {
	data, err := encodeEntry(key, p)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// cacheKey hashes everything the compiled program depends on.
func cacheKey(g *tile.Graph, t Target, deviceKey string) string {
	h := sha256.New()
	w := keyWriter{h}
	w.str(CompilerVersion)
	w.str(deviceKey)
	w.str(t.Backend)
	splitK := 0
	if t.SplitK {
		splitK = 1
	}
	w.ints(t.Workers, t.ComputeUnits, t.MaxWorkGroup, t.LocalMemBytes, t.VectorWidth, t.workers(), splitK)
	encodeGraph(w, g)
	return hex.EncodeToString(h.Sum(nil))
}

// keyWriter writes length-prefixed fields, so that no two different
// sequences of fields encode alike.
type keyWriter struct{ h hash.Hash }

func (w keyWriter) str(s string) {
	w.ints(len(s))
	io.WriteString(w.h, s)
}

func (w keyWriter) ints(xs ...int) {
	var b [8]byte
	for _, x := range xs {
		binary.LittleEndian.PutUint64(b[:], uint64(int64(x)))
		w.h.Write(b[:])
	}
}

func (w keyWriter) floats(xs []float64) {
	var b [8]byte
	w.ints(len(xs))
	for _, x := range xs {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		w.h.Write(b[:])
	}
}

func (w keyWriter) affines(es []tile.Affine) {
	w.ints(len(es))
	for _, e := range es {
		w.ints(len(e.Terms), e.Const)
		for _, t := range e.Terms {
			w.str(t.Index)
			w.ints(t.Coef)
		}
	}
}

// encodeGraph writes a canonical encoding of g: every node's kind, dtype,
// shape, arguments and parameters in node order, then the inputs,
// variables, outputs and updates.
func encodeGraph(w keyWriter, g *tile.Graph) {
	w.str(g.Name())
	w.ints(len(g.Nodes()))
	for _, n := range g.Nodes() {
		w.str(n.Op().Kind())
		w.ints(int(n.DType()), n.Rank())
		w.ints(n.Shape()...)
		w.ints(len(n.Args()))
		for _, a := range n.Args() {
			w.ints(a.ID())
		}
		encodeOp(w, n.Op())
	}
	for _, list := range [][]*tile.Tensor{g.Inputs(), g.Variables()} {
		w.ints(len(list))
		for _, n := range list {
			w.ints(n.ID())
		}
	}
	w.ints(len(g.Outputs()))
	for _, o := range g.Outputs() {
		w.str(o.Name)
		w.ints(o.Tensor.ID())
	}
	w.ints(len(g.Updates()))
	for _, u := range g.Updates() {
		w.ints(u.Variable.ID(), u.Value.ID())
	}
}

func encodeOp(w keyWriter, op tile.Op) {
	switch op := op.(type) {
	case *tile.InputOp:
		w.str(op.Name)
	case *tile.VariableOp:
		w.str(op.Name)
	case *tile.ConstantOp:
		w.floats(op.Value.Data)
	case *tile.ElementwiseOp:
		w.ints(int(op.Fn))
	case *tile.ContractionOp:
		w.ints(int(op.Agg), int(op.Comb))
		w.affines(op.Out)
		w.ints(len(op.Access))
		for _, a := range op.Access {
			w.affines(a)
		}
		w.ints(len(op.Constraints))
		for _, c := range op.Constraints {
			w.affines([]tile.Affine{c.Expr})
			w.ints(c.Bound)
		}
	case *tile.TransposeOp:
		w.ints(len(op.Perm))
		w.ints(op.Perm...)
	case *tile.SliceOp:
		w.ints(len(op.Start))
		w.ints(op.Start...)
		w.ints(op.Stop...)
		w.ints(op.Step...)
	case *tile.ConcatOp:
		w.ints(op.Axis)
	case *tile.PadOp:
		w.ints(len(op.Lo))
		w.ints(op.Lo...)
		w.ints(op.Hi...)
		w.floats([]float64{op.Value})
	case *tile.GatherOp:
		w.ints(op.Axis)
	case *tile.ScatterAddOp:
		w.ints(op.Axis)
	case *tile.IotaOp:
		w.ints(op.Axis)
	case *tile.RandomOp:
		w.str(strconv.FormatUint(op.Stream, 10))
	case *tile.RecurrenceOp:
		rev := 0
		if op.Reverse {
			rev = 1
		}
		w.ints(op.Steps, rev, op.Next().ID())
	case *tile.ReshapeOp, *tile.BroadcastOp, *tile.CastOp, *tile.StopGradientOp:
	default:
		w.str(fmt.Sprintf("%T %+v", op, op))
	}
}
