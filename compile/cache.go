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
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// CompilerVersion is mixed into every cache key; change it whenever the
// compiler's output for some graph changes, so that stale programs are never
// loaded.
const CompilerVersion = "tartan-compile/2"

// CompileCached is Compile with an on-disk cache. Programs are stored under
// $XDG_CACHE_HOME/tartan/programs (~/.cache/tartan when XDG_CACHE_HOME is
// unset), keyed by a SHA-256 of the compiler version, the device key (which
// should name the device and its driver version), the target and a canonical
// encoding of the graph. hit reports whether the program came from the
// cache.
//
// Entries are written to a temporary file and renamed into place, so readers
// never see a partial entry. An entry that cannot be read or decoded, or that
// fails validation, is ignored and rewritten. Failing to write the cache
// does not fail compilation. TARTAN_CACHE=off disables the cache.
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
		st.timed("load", func() error { cached = loadEntry(path, key); return nil })
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

// cacheEntry is what a cache file holds.
type cacheEntry struct {
	Version string
	Key     string
	Program *kir.Program
}

func loadEntry(path, key string) *kir.Program {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var e cacheEntry
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&e); err != nil {
		return nil
	}
	if e.Version != CompilerVersion || e.Key != key || e.Program == nil {
		return nil
	}
	p := e.Program
	if relinkGEMM(p) != nil || p.Validate() != nil {
		return nil
	}
	return p
}

// relinkGEMM restores the GEMMView operand pointers into the kernel bodies,
// which encoding does not preserve.
func relinkGEMM(p *kir.Program) error {
	for _, k := range p.Kernels {
		g := k.Schedule.GEMM
		if g == nil {
			continue
		}
		b := k.Body
		if b == nil || b.Op != kir.Apply || len(b.Args) != 2 || g.A == nil || g.B == nil {
			return errors.New("gemm view without a product body")
		}
		a0 := g.A.Buf == b.Args[0].Buf && g.A.String() == b.Args[0].String()
		g.A, g.B = b.Args[0], b.Args[1]
		if !a0 {
			g.A, g.B = g.B, g.A
		}
	}
	return nil
}

func storeEntry(path, key string, p *kir.Program) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(cacheEntry{Version: CompilerVersion, Key: key, Program: p}); err != nil {
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
	_, werr := f.Write(buf.Bytes())
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
	w.ints(t.Workers, t.ComputeUnits, t.MaxWorkGroup, t.LocalMemBytes, t.VectorWidth, t.workers())
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
	case *tile.ReshapeOp, *tile.BroadcastOp, *tile.CastOp:
	default:
		w.str(fmt.Sprintf("%T %+v", op, op))
	}
}
