package compile

import (
	"bytes"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// fuzzSeed is a real cache entry of a small program.
type fuzzSeed struct {
	g       *tile.Graph
	key     string
	entry   []byte
	program string
}

func fuzzSeeds(f testing.TB) []fuzzSeed {
	cnn := tile.NewGraph("fashion_cnn_step")
	if err := buildCNNStep(cnn, cnnConfig{batch: 2, size: 4, c1: 2, c2: 2, dense: 3, dt: tile.Float32}); err != nil {
		f.Fatal(err)
	}
	var seeds []fuzzSeed
	for _, g := range []*tile.Graph{smallGraph(2), cnn} {
		p, err := Compile(g, testTarget)
		if err != nil {
			f.Fatal(err)
		}
		key := cacheKey(g, testTarget, "fuzz")
		entry, err := encodeEntry(key, p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, fuzzSeed{g, key, entry, p.String()})
	}
	return seeds
}

// FuzzCacheEntry feeds cache entries through decode, validation, loading
// and a run: first as they are (the checksum must reject any change), then
// with the header rebuilt around them so that the body reaches the decoder
// and the checks behind it. Nothing may panic or allocate without bound; an
// accepted program must survive another round trip unchanged, and an
// unchanged entry must give its original program.
func FuzzCacheEntry(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s.entry)
		f.Add(s.entry[headerLen:])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			for _, s := range seeds {
				p, err := decodeEntry(data, s.key)
				if err == nil && !bytes.Equal(data, s.entry) {
					t.Fatalf("a changed entry of %q was accepted", s.g.Name())
				}
				if err == nil && p.String() != s.program {
					t.Fatalf("the entry of %q gives another program", s.g.Name())
				}
			}
			s := seeds[0]
			body := data
			if len(data) >= headerLen && string(data[:len(entryMagic)]) == entryMagic {
				body = data[headerLen:]
				for _, c := range seeds {
					if string(data[len(entryMagic):len(entryMagic)+keyLen]) == c.key {
						s = c
					}
				}
			}
			p, err := decodeEntry(sealEntry(s.key, body), s.key)
			if err != nil {
				return
			}
			intact := bytes.Equal(body, s.entry[headerLen:])
			if intact && (p.String() != s.program || matchGraph(p, s.g) != nil) {
				t.Fatalf("the intact body of %q gives another program", s.g.Name())
			}
			matchGraph(p, s.g)
			again, err := encodeEntry(s.key, p)
			if err != nil {
				t.Fatalf("re-encoding an accepted program: %v", err)
			}
			q, err := decodeEntry(again, s.key)
			if err != nil || q.String() != p.String() {
				t.Fatalf("an accepted program does not survive a round trip: %v", err)
			}
			ran, err := runSmall(p)
			if intact && (!ran || err != nil) {
				t.Fatalf("the program of %q did not run: ran %v, %v", s.g.Name(), ran, err)
			}
		})
	})
}

// runSmall interprets p on deterministic inputs when its buffers and work
// are small (ran reports whether it did), checking the compiler's
// guarantees as it goes: a program that breaks them gives an error.
func runSmall(p *kir.Program) (ran bool, err error) {
	const maxElems, maxWork = 1 << 16, 1 << 20
	sat := func(a, b int) int {
		if a > maxWork || b > maxWork || a*b > maxWork {
			return maxWork + 1
		}
		return a * b
	}
	elems := 0
	for _, b := range p.Buffers {
		elems = min(elems+b.Size(), maxElems+1)
	}
	work := 0
	for _, k := range p.Kernels {
		points := k.Shape.Size()
		for _, l := range k.Reduce {
			points = sat(points, l.Hi-l.Lo+1)
		}
		nodes := exprNodes(k.Body) + exprNodes(k.Epilogue)
		for _, c := range k.Where {
			nodes += ixNodes(c.X)
		}
		work = min(work+sat(points, nodes), maxWork+1)
	}
	if elems > maxElems || work > maxWork {
		return false, nil
	}
	bufs := make([][]float64, len(p.Buffers))
	for _, in := range p.Inputs {
		b := p.Buffers[in.Buffer]
		bufs[in.Buffer] = make([]float64, b.Size())
		for i := range bufs[in.Buffer] {
			bufs[in.Buffer][i] = tile.RoundTo(b.DType, float64(i%5-2)*0.75)
		}
	}
	return true, kir.InterpretStrict(p, bufs)
}

func exprNodes(e *kir.Expr) int {
	if e == nil {
		return 0
	}
	n := 1
	for _, a := range e.Args {
		n += exprNodes(a)
	}
	for _, x := range e.Index {
		n += ixNodes(x)
	}
	return n
}

func ixNodes(x *kir.Ix) int {
	if x == nil {
		return 0
	}
	return 1 + ixNodes(x.A) + ixNodes(x.B) + exprNodes(x.E)
}
