// Package reference is a Device that runs graphs with the float64 reference
// executor (package ref). It is slow and exact, for tests and as the oracle
// of the conformance suite.
package reference

import (
	"fmt"
	"runtime"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Device is the reference device.
type Device struct{}

// New returns the reference device.
func New() *Device { return &Device{} }

// Info implements backend.Device.
func (*Device) Info() backend.Info {
	return backend.Info{ID: "reference", Backend: "reference", Name: "float64 reference executor",
		Vendor: "tartan", ComputeUnits: 1, Driver: runtime.Version()}
}

// Close implements backend.Device.
func (*Device) Close() error { return nil }

// Compile implements backend.Device.
func (*Device) Compile(g *tile.Graph) (backend.Executable, error) {
	m, err := ref.New(g)
	if err != nil {
		return nil, err
	}
	return &executable{g: g, m: m, feeds: map[string]*tile.Value{}}, nil
}

type executable struct {
	g     *tile.Graph
	m     *ref.Machine
	feeds map[string]*tile.Value
	out   map[string]*tile.Value
}

func (e *executable) SetInput(name string, data any) error {
	t := e.g.Leaf(name)
	if t == nil || t.Op().Kind() != "input" {
		return fmt.Errorf("reference: graph %q has no input %q", e.g.Name(), name)
	}
	if err := backend.CheckHost("input "+name, t.DType(), t.Size(), data); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	v, err := tile.ValueOf(t.DType(), t.Shape(), backend.ToFloat64(data))
	if err != nil {
		return err
	}
	e.feeds[name] = v
	return nil
}

func (e *executable) Run() error {
	out, err := e.m.Run(e.feeds)
	if err != nil {
		return err
	}
	e.out = out
	return nil
}

func (e *executable) ReadOutput(name string, dst any) error {
	var t *tile.Tensor
	for _, o := range e.g.Outputs() {
		if o.Name == name {
			t = o.Tensor
		}
	}
	if t == nil {
		return fmt.Errorf("reference: graph %q has no output %q", e.g.Name(), name)
	}
	if err := backend.CheckHost("output "+name, t.DType(), t.Size(), dst); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	v, ok := e.out[name]
	if !ok {
		return fmt.Errorf("reference: output %q read before any run", name)
	}
	backend.FromFloat64(dst, v.Data)
	return nil
}

func (e *executable) ReadVariable(name string, dst any) error {
	v, err := e.m.Var(name)
	if err != nil {
		return err
	}
	if err := backend.CheckHost("variable "+name, v.DType, len(v.Data), dst); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	backend.FromFloat64(dst, v.Data)
	return nil
}

func (e *executable) WriteVariable(name string, data any) error {
	t := e.g.Leaf(name)
	if t == nil || t.Op().Kind() != "variable" {
		return fmt.Errorf("reference: graph %q has no variable %q", e.g.Name(), name)
	}
	if err := backend.CheckHost("variable "+name, t.DType(), t.Size(), data); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	v, err := tile.ValueOf(t.DType(), t.Shape(), backend.ToFloat64(data))
	if err != nil {
		return err
	}
	return e.m.SetVar(name, v)
}

func (e *executable) Close() error { return nil }
