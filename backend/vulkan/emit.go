package vulkan

import (
	"fmt"

	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/kir"
)

// emitFunc turns kernel k of p into a compute shader for target t.
type emitFunc func(p *kir.Program, k int, t spirv.Target) (*spirv.Kernel, error)

// emit is the SPIR-V emitter Device.Load uses.
var emit emitFunc = func(p *kir.Program, k int, t spirv.Target) (*spirv.Kernel, error) {
	return nil, fmt.Errorf("vulkan: program %q: kernel %d (%s): this build has no SPIR-V emitter yet", p.Name, k, p.Kernels[k].Name)
}
