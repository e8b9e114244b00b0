package vulkan

import (
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/kir"
)

// emitFunc turns kernel k of p into a compute shader for target t.
type emitFunc func(p *kir.Program, k int, t spirv.Target) (*spirv.Kernel, error)

// emit is the SPIR-V emitter Device.Load uses (tests load programs with
// hand-written shaders through Device.load instead).
var emit emitFunc = spirv.Emit
