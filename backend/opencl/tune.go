package opencl

import (
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
)

// tuneVersion is part of every tuning key: change it when the
// matrix-product templates change, so that decisions timed on the old ones
// are measured again.
const tuneVersion = "opencl-gemm-2"

// TuneKey implements tune.Device: the device, its driver and the
// precision it was opened with.
func (d *Device) TuneKey() string {
	platform := ""
	if d.cand.Platform != nil {
		platform = d.cand.Platform.Version
	}
	return strings.Join([]string{tuneVersion, d.info.Name, d.info.Vendor, d.info.DriverVersion, d.info.Version,
		platform, "matmul=" + d.cfg.matmul, "test=" + d.cfg.test.emulateMMA}, "|")
}

// TuneSpace implements tune.Device: the tilings of kernel k that the
// templates can render on the device. The tensor cores are among them
// where the device's precision allows them for any product.
func (d *Device) TuneSpace(p *kir.Program, k int) (kir.Tiling, []kir.Tiling) {
	t := d.traits(p)
	if t.MMA == "" && d.cfg.matmul == "" && d.cfg.test.emulateMMA == "" {
		if m := d.Matmul(); m != MatmulFP32 {
			t.MMA = m
		}
	}
	r := &renderer{p: p, t: t}
	return r.tuneSpace(p.Kernels[k])
}

// LoadProgram implements tune.Device.
func (d *Device) LoadProgram(p *kir.Program) (backend.Executable, error) {
	e, err := d.Load(p)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// withoutMatrixTilings returns p with the tilings that use a matrix
// instruction removed, for a device that stopped using its tensor cores.
func withoutMatrixTilings(p *kir.Program) *kir.Program {
	q := *p
	q.Kernels = append([]*kir.Kernel(nil), p.Kernels...)
	for i, k := range q.Kernels {
		if t := k.Schedule.Tiling; t != nil && t.Matrix != "" {
			kk := *k
			kk.Schedule.Tiling = nil
			q.Kernels[i] = &kk
		}
	}
	return &q
}
