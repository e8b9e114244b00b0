package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/npy"
	"github.com/tartanml/tartan/onnx"
	"github.com/tartanml/tartan/tile"
)

const runAbout = `Runs MODEL.onnx once on a device. Each --input binds a graph input to FILE, a
TensorProto (.pb, as in ONNX's test data) or a NumPy array (.npy): NAME=FILE
binds by name, a plain FILE the next graph input not bound by name, in the
order of the graph's inputs that are not initializers. Dimensions the model
leaves open take the files' shapes. It prints the model's inputs and outputs,
the device, and the compile and run times; with --out DIR each output is
written to DIR/NAME.npy (characters of NAME other than letters, digits, '.',
'-' and '_' become '_').`

// inputFlag collects the repeated --input flags.
type inputFlag []string

func (f *inputFlag) String() string     { return strings.Join(*f, ",") }
func (f *inputFlag) Set(s string) error { *f = append(*f, s); return nil }

// runReport is what tartan run --json writes.
type runReport struct {
	Model          string          `json:"model"`
	Device         string          `json:"device"`
	Inputs         []runTensorInfo `json:"inputs"`
	Outputs        []runTensorInfo `json:"outputs"`
	CompileSeconds float64         `json:"compile_seconds"`
	RunSeconds     float64         `json:"run_seconds"`
}

// runTensorInfo describes one bound input or one output.
type runTensorInfo struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	File  string `json:"file,omitempty"`
}

// runCommand runs tartan run.
func runCommand(args []string, stdout, stderr io.Writer) error {
	var dev, outDir, jsonPath string
	var inputs inputFlag
	f := newVerbFlags("run", "run MODEL.onnx [--input [NAME=]FILE]... [flags]", runAbout, exitHelp)
	f.deviceFlag(&dev)
	f.Var(&inputs, "input", "bind a graph input to `[NAME=]FILE` (.pb or .npy); repeat for each input")
	f.StringVar(&outDir, "out", "", "write each output to `DIR`/NAME.npy")
	f.jsonFlag(&jsonPath)
	rest, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		return usageError("run needs MODEL.onnx, the file of an ONNX model")
	case len(rest) > 1:
		return usageError("run takes one MODEL.onnx, got %q (bind inputs with --input)", rest)
	}
	path := rest[0]
	if outDir != "" {
		fi, err := os.Stat(outDir)
		if err != nil || !fi.IsDir() {
			return usageError("--out %s must name an existing directory", outDir)
		}
	}
	if _, err := checkOutputs(outputFlag{"json", jsonPath}); err != nil {
		return err
	}
	m, err := onnx.Load(path)
	if err != nil {
		return err
	}
	values, files, err := bindInputs(m, inputs, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Model: %s (%s, IR version %d, opset %d)\n", path, producer(m), m.IRVersion, m.Opsets[""])
	fmt.Fprintln(stdout, "Inputs:")
	rep := runReport{Model: path}
	for _, in := range m.Inputs {
		v, ok := values[in.Name]
		if !ok {
			fmt.Fprintf(stdout, "  %s %s%s (not given)\n", in.Name, in.Type, declaredShape(in))
			continue
		}
		fmt.Fprintf(stdout, "  %s %s%s <- %s %v\n", in.Name, in.Type, declaredShape(in), files[in.Name], v.Shape)
		rep.Inputs = append(rep.Inputs, runTensorInfo{Name: in.Name, Type: in.Type.String(), Shape: v.Shape, File: files[in.Name]})
	}

	g, err := onnxGraph(m, values)
	if err != nil {
		return err
	}

	d, _, err := openDevice(dev, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	rep.Device = d.Info().ID
	fmt.Fprintf(stdout, "Device: %s (%s)\n", d.Info().ID, d.Info().Name)
	t0 := time.Now()
	x, err := d.Compile(g)
	if err != nil {
		return fmt.Errorf("compiling %s for %s: %w", path, d.Info().ID, err)
	}
	defer x.Close()
	rep.CompileSeconds = time.Since(t0).Seconds()
	if err := feedInputs(x, m, g, values); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t1 := time.Now()
	if err := x.Run(); err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	outs := make([]*tile.Value, len(g.Outputs()))
	for i, o := range g.Outputs() {
		dst := backend.HostSlice(o.Tensor.DType(), make([]float64, o.Tensor.Size()))
		if err := x.ReadOutput(o.Name, dst); err != nil {
			return fmt.Errorf("reading output %q: %w", o.Name, err)
		}
		outs[i] = &tile.Value{DType: o.Tensor.DType(), Shape: o.Tensor.Shape(), Data: backend.ToFloat64(dst)}
	}
	rep.RunSeconds = time.Since(t1).Seconds()
	fmt.Fprintf(stdout, "Compiled in %.2f s, ran in %s\n", rep.CompileSeconds, formatSeconds(rep.RunSeconds))

	fmt.Fprintln(stdout, "Outputs:")
	onnxName := map[string]string{}
	for _, o := range m.Outputs {
		onnxName[m.TileName(o.Name)] = o.Name
	}
	for i, o := range g.Outputs() {
		name := onnxName[o.Name]
		if name == "" {
			name = o.Name
		}
		v := outs[i]
		info := runTensorInfo{Name: name, Type: onnx.FromTile(v.DType).String(), Shape: v.Shape}
		where := ""
		if outDir != "" {
			file := filepath.Join(outDir, fileName(name)+".npy")
			a, err := npy.FromValue(v)
			if err == nil {
				err = npy.WriteFile(file, a)
			}
			if err != nil {
				return fmt.Errorf("output %q: %w", name, err)
			}
			info.File, where = file, " -> "+file
		}
		fmt.Fprintf(stdout, "  %s %s %v%s: %s\n", name, info.Type, v.Shape, where, preview(v))
		rep.Outputs = append(rep.Outputs, info)
	}
	if jsonPath != "" {
		return writeJSON(jsonPath, rep)
	}
	return nil
}

// onnxGraph converts m with the input values given, their shapes binding
// the dimensions m leaves open. When an op's output shape depends on an
// input's values (a Reshape to a shape given as an input), those inputs are
// fixed to their values and m is converted again.
func onnxGraph(m *onnx.Model, values map[string]*tile.Value) (*tile.Graph, error) {
	opt := onnx.Options{Shapes: map[string]tile.Shape{}, Values: map[string]*tile.Value{}}
	for name, v := range values {
		opt.Shapes[name] = v.Shape
	}
	for {
		g, err := m.Graph(opt)
		var need *onnx.ValueNeededError
		if !errors.As(err, &need) {
			return g, err
		}
		progress := false
		for _, name := range need.Inputs {
			if _, done := opt.Values[name]; !done && values[name] != nil {
				opt.Values[name] = values[name]
				progress = true
			}
		}
		if !progress {
			return nil, err
		}
	}
}

// feedInputs sets every input of g, compiled into x, from the values of
// m's graph inputs.
func feedInputs(x backend.Executable, m *onnx.Model, g *tile.Graph, values map[string]*tile.Value) error {
	byTile := map[string]*tile.Value{}
	for name, v := range values {
		byTile[m.TileName(name)] = v
	}
	for _, in := range g.Inputs() {
		name := in.Op().(*tile.InputOp).Name
		v := byTile[name]
		if v == nil {
			return fmt.Errorf("the graph's input %q has no data", name)
		}
		if err := x.SetInput(name, backend.HostSlice(in.DType(), v.Data)); err != nil {
			return fmt.Errorf("input %q: %w", name, err)
		}
	}
	return nil
}

// bindInputs reads the --input files and binds them to the model's graph
// inputs, returning the values and the file of each by ONNX name.
func bindInputs(m *onnx.Model, flags []string, stderr io.Writer) (map[string]*tile.Value, map[string]string, error) {
	byName := map[string]onnx.ValueInfo{}
	for _, in := range m.Inputs {
		byName[in.Name] = in
	}
	files := map[string]string{}
	var unnamed []string
	for _, s := range flags {
		name, file, named := strings.Cut(s, "=")
		if !named || strings.ContainsAny(name, `/\`) {
			// A path holding "=" is a file, not NAME=FILE.
			unnamed = append(unnamed, s)
			continue
		}
		if _, ok := byName[name]; !ok {
			return nil, nil, usageError("--input %s: the model has no input %q (its inputs: %s)", s, name, inputNames(m))
		}
		if _, dup := files[name]; dup {
			return nil, nil, usageError("--input %s: input %q is bound twice", s, name)
		}
		files[name] = file
	}
	k := 0
	for _, in := range m.Inputs {
		if _, done := files[in.Name]; done {
			continue
		}
		if k == len(unnamed) {
			break
		}
		files[in.Name] = unnamed[k]
		k++
	}
	if k < len(unnamed) {
		return nil, nil, usageError("--input %s: the model has %d inputs (%s), all bound already", unnamed[k], len(m.Inputs), inputNames(m))
	}
	values := map[string]*tile.Value{}
	for _, in := range m.Inputs {
		file, ok := files[in.Name]
		if !ok {
			if in.Optional {
				continue
			}
			return nil, nil, usageError("input %q (%s%s) is not given: bind it with --input %s=FILE", in.Name, in.Type, declaredShape(in), in.Name)
		}
		if in.Sequence {
			return nil, nil, fmt.Errorf("input %q is a sequence of tensors, which tartan run cannot bind from a file", in.Name)
		}
		v, err := readTensorFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		if v, err = fitType(in, file, v, stderr); err != nil {
			return nil, nil, err
		}
		if err := fitShape(in, file, v.Shape); err != nil {
			return nil, nil, err
		}
		values[in.Name] = v
	}
	return values, files, nil
}

// readTensorFile reads a TensorProto (.pb) or NumPy (.npy) file.
func readTensorFile(file string) (*tile.Value, error) {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".npy":
		a, err := npy.ReadFile(file)
		if err != nil {
			return nil, err
		}
		return a.ToValue()
	case ".pb":
		b, err := readBounded(file, onnx.MaxModelBytes)
		if err != nil {
			return nil, err
		}
		t, err := onnx.DecodeTensor(b, filepath.Dir(file))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return t.Value()
	}
	return nil, fmt.Errorf("%s: want a .pb (TensorProto) or .npy file", file)
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(file string, limit int64) ([]byte, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a tensor file may hold", file, fi.Size(), limit)
	}
	return os.ReadFile(file)
}

// fitType checks a file's element type against the input's: floating-point
// data converts to the input's floating-point type (NumPy's default is
// float64), with a note; other mismatches are errors.
func fitType(in onnx.ValueInfo, file string, v *tile.Value, stderr io.Writer) (*tile.Value, error) {
	want, ok := in.Type.Tile()
	if !ok {
		if want, ok = in.Type.Storage(); !ok {
			return nil, fmt.Errorf("input %q: element type %s is not supported", in.Name, in.Type)
		}
	}
	if v.DType == want {
		return v, nil
	}
	if v.DType.IsFloat() && want.IsFloat() {
		fmt.Fprintf(stderr, "tartan: input %q: converting %s's %v elements to the model's %v\n", in.Name, file, v.DType, want)
		c, err := tile.ValueOf(want, v.Shape, roundTo(want, v.Data))
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("input %q wants %s elements, but %s holds %v", in.Name, in.Type, file, v.DType)
}

// fitShape checks a file's shape against the dimensions the model fixes.
func fitShape(in onnx.ValueInfo, file string, shape tile.Shape) error {
	if !in.HasShape {
		return nil
	}
	if len(shape) != len(in.Shape) {
		return fmt.Errorf("input %q (%s%s) has rank %d, but %s holds shape %v", in.Name, in.Type, declaredShape(in), len(in.Shape), file, shape)
	}
	for d, dim := range in.Shape {
		if dim.Value >= 0 && int64(shape[d]) != dim.Value {
			return fmt.Errorf("input %q (%s%s): %s holds shape %v, whose dimension %d is not %d", in.Name, in.Type, declaredShape(in), file, shape, d, dim.Value)
		}
	}
	return nil
}

// roundTo rounds float64 data to dt's precision.
func roundTo(dt tile.DType, data []float64) []float64 {
	return backend.ToFloat64(backend.HostSlice(dt, data))
}

// producer names the program that wrote m.
func producer(m *onnx.Model) string {
	if m.Producer == "" {
		return "producer not named"
	}
	return "from " + m.Producer
}

// inputNames lists m's graph inputs for messages.
func inputNames(m *onnx.Model) string {
	names := make([]string, len(m.Inputs))
	for i, in := range m.Inputs {
		names[i] = in.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// declaredShape formats an input's declared shape, symbolic dimensions by
// name and unknown ones as ?.
func declaredShape(in onnx.ValueInfo) string {
	if !in.HasShape {
		return ""
	}
	dims := make([]string, len(in.Shape))
	for i, d := range in.Shape {
		dims[i] = d.String()
	}
	return "[" + strings.Join(dims, ", ") + "]"
}

// fileName makes an ONNX name safe as a file name.
func fileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s == "." || s == ".." {
		s = "output"
	}
	return s
}

// preview shows an output's first elements.
func preview(v *tile.Value) string {
	const show = 6
	parts := make([]string, 0, show+1)
	for i, x := range v.Data {
		if i == show {
			parts = append(parts, fmt.Sprintf("… (%d elements)", len(v.Data)))
			break
		}
		parts = append(parts, fmt.Sprintf("%.6g", x))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// formatSeconds formats a short duration.
func formatSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}
