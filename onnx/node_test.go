package onnx

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/tile"
)

// The node test suite: ONNX's own backend tests, one directory per test with
// model.onnx and test_data_set_N/{input,output}_K.pb.
const (
	nodeTestDir      = "/usr/share/libonnx-testdata/data/node"
	nodeTestEnv      = "TARTAN_ONNX_NODE_TESTS"
	expectedFailures = "testdata/node_expected_failures.txt"
)

var updateExpected = flag.Bool("update", false, "rewrite "+expectedFailures+" from the node suite's run")

// TestNodeSuite runs every ONNX node test on the CPU backend. A test listed
// in testdata/node_expected_failures.txt must fail and every other one must
// pass; -update (or TARTAN_ONNX_UPDATE=1) rewrites the list from the run.
func TestNodeSuite(t *testing.T) {
	dir := nodeTestDir
	if d := os.Getenv(nodeTestEnv); d != "" {
		dir = d
	}
	runSuite(t, "node", dir, expectedFailures)
}

// TestModelSuites runs ONNX's other suites of whole models in the same
// layout (exported from PyTorch modules and operators, and small models),
// found next to the node tests, each with its list of expected failures.
func TestModelSuites(t *testing.T) {
	dir := nodeTestDir
	if d := os.Getenv(nodeTestEnv); d != "" {
		dir = d
	}
	for _, suite := range []string{"pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			runSuite(t, suite, filepath.Join(filepath.Dir(dir), suite), "testdata/"+suite+"_expected_failures.txt")
		})
	}
}

// runSuite runs every test directory under dir and checks the outcome
// against the list of expected failures in the file expectedFailures.
func runSuite(t *testing.T, suite, dir, expectedFailures string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("ONNX's %s tests are not installed (%v); set %s to the node tests' directory", suite, err, nodeTestEnv)
	}
	update := *updateExpected || os.Getenv("TARTAN_ONNX_UPDATE") == "1"
	expected, err := readExpected(expectedFailures)
	if err != nil && !update {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "test_") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	dev := cpu.New(cpu.Cache(false))
	defer dev.Close()
	var mu sync.Mutex
	failures := map[string]string{}
	ran := 0
	t.Run(suite, func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				err := runNodeTest(dev, filepath.Join(dir, name))
				mu.Lock()
				ran++
				if err != nil {
					failures[name] = strings.ReplaceAll(reason(err), filepath.Join(dir, name)+string(filepath.Separator), "")
				}
				mu.Unlock()
				if update {
					return
				}
				want, listed := expected[name]
				switch {
				case err != nil && !listed:
					t.Errorf("fails: %v", err)
				case err == nil && listed:
					t.Errorf("passes, but %s lists it as failing (%s): remove the line", expectedFailures, want)
				case err != nil:
					t.Logf("fails as expected: %v", err)
				}
			})
		}
	})
	t.Logf("%s tests: %d of %d pass", suite, ran-len(failures), ran)
	if ran != len(names) {
		if update {
			t.Fatalf("%d of the %d tests ran: run them all to rewrite %s", ran, len(names), expectedFailures)
		}
		return
	}
	if update {
		if err := writeExpected(expectedFailures, failures); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d failing tests", expectedFailures, len(failures))
		return
	}
	for name := range expected {
		if _, ok := failures[name]; !ok && !contains(names, name) {
			t.Errorf("%s lists %s, which is not in %s", expectedFailures, name, dir)
		}
	}
}

func contains(names []string, n string) bool {
	i := sort.SearchStrings(names, n)
	return i < len(names) && names[i] == n
}

// reason turns a test's error into the one-line reason of the list.
func reason(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// readExpected reads the list of failing tests: "name  reason" per line.
func readExpected(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the expected failures (run with -update to write them): %w", err)
	}
	m := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, why, _ := strings.Cut(line, " ")
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", path, i+1, name)
		}
		m[name] = strings.TrimSpace(why)
	}
	return m, nil
}

func writeExpected(path string, failures map[string]string) error {
	var names []string
	for n := range failures {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# ONNX tests that do not pass, with the reason; TestNodeSuite and TestModelSuites keep this true.\n")
	b.WriteString("# Regenerate with: go test ./onnx -run 'TestNodeSuite|TestModelSuites' -update\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", n, failures[n])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// runNodeTest runs one test directory: every data set through the model
// converted and compiled for its input shapes.
func runNodeTest(dev backend.Device, dir string) error {
	m, err := Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return err
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return errors.New("no test data sets")
	}
	sort.Strings(sets)
	for _, set := range sets {
		if err := runDataSet(dev, m, set); err != nil {
			if len(sets) == 1 {
				return err
			}
			return fmt.Errorf("%s: %w", filepath.Base(set), err)
		}
	}
	return nil
}

// readFiles reads prefix_0.pb, prefix_1.pb, … of dir.
func readFiles(dir, prefix string) ([][]byte, error) {
	var files [][]byte
	for k := 0; ; k++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s_%d.pb", prefix, k)))
		if errors.Is(err, os.ErrNotExist) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		files = append(files, data)
	}
}

// decodeOptional returns the content of a serialized OptionalProto, nil
// and false when it is empty.
func decodeOptional(data []byte) ([]byte, bool, error) {
	var content []byte
	present := false
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, false, protowire.ParseError(n)
		}
		data = data[n:]
		if (num == 3 || num == 5) && typ == protowire.BytesType { // tensor_value, sequence_value
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return nil, false, protowire.ParseError(n)
			}
			content, present = b, true
			data = data[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return nil, false, protowire.ParseError(n)
		}
		data = data[n:]
	}
	return content, present, nil
}

// decodeAs decodes a test's tensor or, for a sequence, its elements; an
// empty optional gives nil.
func decodeAs(data []byte, info ValueInfo, file string) ([]*Tensor, error) {
	if info.Optional {
		content, present, err := decodeOptional(data)
		if err != nil {
			return nil, fmt.Errorf("%s: decoding an OptionalProto: %w", file, err)
		}
		if !present {
			return nil, nil
		}
		data = content
	}
	if info.Sequence {
		ts, err := DecodeSequence(data, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return ts, nil
	}
	t, err := DecodeTensor(data, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return []*Tensor{t}, nil
}

func runDataSet(dev backend.Device, m *Model, set string) error {
	inFiles, err := readFiles(set, "input")
	if err != nil {
		return err
	}
	outFiles, err := readFiles(set, "output")
	if err != nil {
		return err
	}
	if len(inFiles) != len(m.Inputs) {
		return fmt.Errorf("%d inputs for a model of %d", len(inFiles), len(m.Inputs))
	}
	if len(outFiles) != len(m.Outputs) {
		return fmt.Errorf("%d outputs for a model of %d", len(outFiles), len(m.Outputs))
	}
	opt := Options{Shapes: map[string]tile.Shape{}, Values: map[string]*tile.Value{}, Sequences: map[string][]tile.Shape{}}
	feeds := map[string]*Tensor{}  // tensor inputs by ONNX name
	byTile := map[string]*Tensor{} // every tile input's data
	for k, in := range m.Inputs {
		ts, err := decodeAs(inFiles[k], in, fmt.Sprintf("input_%d.pb", k))
		if err != nil {
			return err
		}
		if ts == nil && in.Optional {
			continue // empty
		}
		if in.Sequence {
			shapes := []tile.Shape{}
			for e, t := range ts {
				shapes = append(shapes, t.Shape())
				byTile[m.ElementName(in.Name, e)] = t
			}
			opt.Sequences[in.Name] = shapes
			continue
		}
		opt.Shapes[in.Name] = ts[0].Shape()
		feeds[in.Name] = ts[0]
		byTile[m.TileName(in.Name)] = ts[0]
	}
	var g *tile.Graph
	for {
		g, err = m.Graph(opt)
		var need *ValueNeededError
		if !errors.As(err, &need) {
			break
		}
		for _, name := range need.Inputs {
			_, done := opt.Values[name]
			if done || feeds[name] == nil {
				return err
			}
			v, verr := feeds[name].Value()
			if verr != nil {
				return verr
			}
			opt.Values[name] = v
		}
	}
	if err != nil {
		return err
	}
	x, err := dev.Compile(g)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	defer x.Close()
	for _, in := range g.Inputs() {
		name := in.Op().(*tile.InputOp).Name
		t := byTile[name]
		if st, _ := t.Type.Storage(); st != in.DType() {
			return fmt.Errorf("input %q: the test gives %s, the model takes %s", name, t.Type, FromTile(in.DType()))
		}
		var data any
		if in.DType() == tile.Int64 && t.Int64 != nil {
			data = t.Int64
		} else {
			data = backend.HostSlice(in.DType(), t.Data)
		}
		if err := x.SetInput(name, data); err != nil {
			return err
		}
	}
	if err := x.Run(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	outs := map[string]*tile.Tensor{}
	for _, o := range g.Outputs() {
		outs[o.Name] = o.Tensor
	}
	for k, o := range m.Outputs {
		wants, err := decodeAs(outFiles[k], o, fmt.Sprintf("output_%d.pb", k))
		if err != nil {
			return err
		}
		if wants == nil && o.Optional {
			if outs[m.TileName(o.Name)] != nil || outs[m.ElementName(o.Name, 0)] != nil {
				return fmt.Errorf("output %q: computed a value, expected an empty optional", o.Name)
			}
			continue
		}
		names := []string{m.TileName(o.Name)}
		if o.Sequence {
			names = nil
			for e := range wants {
				names = append(names, m.ElementName(o.Name, e))
			}
			if outs[m.ElementName(o.Name, len(wants))] != nil {
				return fmt.Errorf("output %q: the sequence has more than the %d elements expected", o.Name, len(wants))
			}
		}
		for e, tname := range names {
			want, got := wants[e], outs[tname]
			if got == nil {
				return fmt.Errorf("output %q: %s is not in the graph", o.Name, tname)
			}
			// The graph holds 8- and 16-bit integers in int32; the
			// converter checked the computed types against the model's.
			computed := FromTile(got.DType())
			if st, _ := o.Type.Storage(); o.Type != Undefined && st == got.DType() {
				computed = o.Type
			}
			if computed != want.Type {
				return fmt.Errorf("output %q: computed %s, expected %s", tname, computed, want.Type)
			}
			if !got.Shape().Equal(want.Shape()) {
				return fmt.Errorf("output %q: computed shape %v, expected %v", tname, got.Shape(), want.Shape())
			}
			dst := backend.HostSlice(got.DType(), make([]float64, got.Size()))
			if err := x.ReadOutput(tname, dst); err != nil {
				return err
			}
			if err := compareOutput(got.DType(), dst, want); err != nil {
				return fmt.Errorf("output %q (%s%v): %w", tname, want.Type, want.Dims, err)
			}
		}
	}
	return nil
}

// compareOutput compares a computed output with the expected tensor:
// floats within rtol 1e-3 and atol 1e-7 with NaNs and infinities matching,
// integers and booleans exactly.
func compareOutput(dt tile.DType, got any, want *Tensor) error {
	if dt == tile.Int64 && want.Int64 != nil {
		g := got.([]int64)
		for i := range g {
			if g[i] != want.Int64[i] {
				return fmt.Errorf("element %d is %d, expected %d", i, g[i], want.Int64[i])
			}
		}
		return nil
	}
	g := backend.ToFloat64(got)
	bad, worst := -1, 0.0
	for i, w := range want.Data {
		x := g[i]
		if !dt.IsFloat() {
			if x != w {
				return fmt.Errorf("element %d is %v, expected %v", i, x, w)
			}
			continue
		}
		switch {
		case math.IsNaN(w) || math.IsNaN(x):
			if math.IsNaN(w) != math.IsNaN(x) {
				return fmt.Errorf("element %d is %v, expected %v", i, x, w)
			}
		case math.IsInf(w, 0) || math.IsInf(x, 0):
			if x != w {
				return fmt.Errorf("element %d is %v, expected %v", i, x, w)
			}
		default:
			d := math.Abs(x - w)
			if d > 1e-7+1e-3*math.Abs(w) && d > worst {
				bad, worst = i, d
			}
		}
	}
	if bad >= 0 {
		return fmt.Errorf("element %d is %v, expected %v (and maybe others; the largest difference)", bad, g[bad], want.Data[bad])
	}
	return nil
}
