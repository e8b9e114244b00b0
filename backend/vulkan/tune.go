package vulkan

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/kir"
)

// tuneVersion is part of every tuning key: change it when the
// matrix-product templates change, so that decisions timed on the old
// ones are measured again.
const tuneVersion = "vulkan-gemm-1"

// TuneKey implements tune.Device: the device, its driver and Vulkan
// version, and the precision it was opened with.
func (d *Device) TuneKey() string {
	pd := d.cand.Device
	return strings.Join([]string{tuneVersion, pd.Name, vendorName(pd.VendorID), fmt.Sprintf("%#x", pd.DriverVersion),
		d.Info().Driver, "matmul=" + d.cfg.matmul}, "|")
}

// TuneSpace implements tune.Device with spirv.Space: cooperative matrices
// are in it where the device's precision runs products on them.
func (d *Device) TuneSpace(p *kir.Program, k int) (kir.Tiling, []kir.Tiling) {
	return spirv.Space(p, k, d.target)
}

// LoadProgram implements tune.Device.
func (d *Device) LoadProgram(p *kir.Program) (backend.Executable, error) {
	e, err := d.Load(p)
	if err != nil {
		return nil, err // not e: a nil *Executable in the interface is not nil
	}
	return e, nil
}
