package spirv

import (
	"math"
	"sort"
	"strconv"
)

// The SPIR-V 1.3 opcodes and enumerants, and the GLSL.std.450
// instructions, that the emitter uses.
const (
	opName, opExtInstImport, opExtInst, opMemoryModel, opEntryPoint  = 5, 11, 12, 14, 15
	opExecutionMode, opCapability, opTypeVoid, opTypeBool, opTypeInt = 16, 17, 19, 20, 21
	opTypeFloat, opTypeVector, opTypeRuntimeArr, opTypeStruct        = 22, 23, 29, 30
	opTypePointer, opTypeFunction, opConstantTrue, opConstantFalse   = 32, 33, 41, 42
	opConstant, opFunction, opFunctionEnd, opVariable, opLoad        = 43, 54, 56, 59, 61
	opStore, opAccessChain, opDecorate, opMemberDecorate             = 62, 65, 71, 72
	opCompositeExtr, opConvertFToS, opConvertSToF, opConvertUToF     = 81, 110, 111, 112
	opUConvert, opSConvert, opFConvert, opBitcast                    = 113, 114, 115, 124
	opSNegate, opFNegate, opIAdd, opFAdd, opISub, opFSub             = 126, 127, 128, 129, 130, 131
	opIMul, opFMul, opUDiv, opSDiv, opFDiv, opUMod, opSRem           = 132, 133, 134, 135, 136, 137, 138
	opUMulExtended, opIsNan, opIsInf                                 = 151, 156, 157
	opLogicalEqual, opLogicalNotEqual, opLogicalOr, opLogicalAnd     = 164, 165, 166, 167
	opLogicalNot, opSelect, opIEqual, opINotEqual                    = 168, 169, 170, 171
	opSGreaterThan, opSGreaterEqual, opULessThan, opSLessThan        = 173, 175, 176, 177
	opSLessEqual, opFOrdEqual, opFUnordNotEqual, opFOrdLessThan      = 179, 180, 183, 184
	opFOrdGreaterThan, opFOrdLessEqual, opFOrdGreaterEq              = 186, 188, 190
	opShiftRightLogic, opShiftRightArith, opBitwiseXor, opBitwiseAnd = 194, 195, 198, 199
	opLoopMerge, opSelectionMerge, opLabel, opBranch, opBranchCond   = 246, 247, 248, 249, 250
	opReturn, opTypeArray, opControlBarrier, opExtension             = 253, 28, 224, 10
	opConstantNull, opPhi, opSwitch                                  = 46, 245, 251
	// SPV_KHR_cooperative_matrix.
	opTypeCoopMatrix, opCoopMatrixLoad, opCoopMatrixStore, opCoopMatrixMulAdd = 4456, 4457, 4458, 4459

	capShader, capFloat64, capInt64                      = 1, 10, 11
	capSignedZeroInfNanPreserve                          = 4466
	capFloat16, capCoopMatrix, capVulkanMemoryModel      = 9, 6022, 5345
	capBFloat16Type, capBFloat16CoopMatrix               = 5116, 5118
	scInput, scFunction, scPushConstant, scStorageBuffer = 1, 7, 9, 12
	scWorkgroup                                          = 4
	decBlock, decArrayStride, decBuiltIn, decAliased     = 2, 6, 11, 20
	decNonWritable, decBinding, decDescriptorSet         = 24, 33, 34
	decOffset                                            = 35
	// BuiltIn values of uvec3 Input variables.
	builtInNumWorkgroups, builtInWorkgroupID            = 24, 26
	builtInLocalInvocationID, builtInGlobalInvocationID = 27, 28

	glslFAbs, glslFloor, glslCeil, glslTanh, glslPow, glslExp = 4, 8, 9, 21, 26, 27
	glslLog, glslSqrt, glslInverseSqrt, glslFMin, glslFMax    = 28, 31, 32, 37, 40
	glslFrexpStruct, glslLdexp                                = 52, 53
)

// module builds one SPIR-V module: ids, the logical sections in the order
// the specification requires, and deduplicated types and constants (SPIR-V
// forbids two declarations of one non-aggregate type).
type module struct {
	bound   uint32
	caps    map[uint32]bool
	glsl    uint32 // the GLSL.std.450 import
	names   []uint32
	annots  []uint32
	globals []uint32 // types, constants and global variables
	iface   []uint32 // Input variables, for the entry point
	cache   map[string]uint32
	// The function being built: its Function-class variables (which must
	// open its first block) and its code after the first label.
	fvars, code []uint32
	// preserve lists the float widths whose signed zeros, infinities and
	// NaNs the module asks to keep (SPV_KHR_float_controls).
	preserve []uint32
	// exts lists further SPIR-V extensions the module declares; vulkanMM
	// selects the Vulkan memory model (cooperative matrices need it)
	// rather than GLSL450's.
	exts     map[string]bool
	vulkanMM bool
}

func newModule() *module {
	m := &module{bound: 1, caps: map[uint32]bool{capShader: true}, cache: map[string]uint32{}}
	m.glsl = m.id()
	return m
}

func (m *module) id() uint32 { m.bound++; return m.bound - 1 }

// inst appends one instruction (opcode and operand words) to a section.
func inst(sec *[]uint32, op uint32, operands ...uint32) {
	*sec = append(*sec, uint32(len(operands)+1)<<16|op)
	*sec = append(*sec, operands...)
}

// str encodes a literal string: UTF-8, NUL-terminated, padded to words.
func str(s string) []uint32 {
	b := append([]byte(s), 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	return w
}

// once returns the id made for key, making it with mk the first time.
func (m *module) once(key string, mk func() uint32) uint32 {
	if id, ok := m.cache[key]; ok {
		return id
	}
	id := mk()
	m.cache[key] = id
	return id
}

// global declares (once per key) a type with opcode op and operands after
// its result id.
func (m *module) global(key string, op uint32, operands ...uint32) uint32 {
	return m.once(key, func() uint32 {
		id := m.id()
		inst(&m.globals, op, append([]uint32{id}, operands...)...)
		return id
	})
}

// typed declares (once per key) a constant of type t: unlike a type, its
// result id follows its type.
func (m *module) typed(key string, op, t uint32, words ...uint32) uint32 {
	return m.once(key, func() uint32 {
		id := m.id()
		inst(&m.globals, op, append([]uint32{t, id}, words...)...)
		return id
	})
}

// Types. Int64 and Float64 types add their capabilities.
func (m *module) tVoid() uint32 { return m.global("void", opTypeVoid) }
func (m *module) tBool() uint32 { return m.global("bool", opTypeBool) }

func (m *module) tInt(bits uint32, signed bool) uint32 {
	if bits == 64 {
		m.caps[capInt64] = true
	}
	s := uint32(b2i(signed))
	return m.global(key("int", bits, s), opTypeInt, bits, s)
}

func (m *module) tFloat(bits uint32) uint32 {
	if bits == 64 {
		m.caps[capFloat64] = true
	}
	return m.global(key("float", bits), opTypeFloat, bits)
}

// tHalf returns the 16-bit float type: IEEE binary16, or bfloat16.
func (m *module) tHalf(bf16 bool) uint32 {
	if bf16 {
		m.caps[capBFloat16Type] = true
		m.extension("SPV_KHR_bfloat16")
		return m.global("bfloat16", opTypeFloat, 16, 0) // FP encoding BFloat16KHR
	}
	m.caps[capFloat16] = true
	return m.tFloat(16)
}

// tCoop returns the sub-group cooperative matrix type of rows × cols
// elements of type elem for use (0: A, 1: B, 2: accumulator).
func (m *module) tCoop(elem uint32, rows, cols, use int) uint32 {
	m.caps[capCoopMatrix] = true
	m.extension("SPV_KHR_cooperative_matrix")
	m.vulkanMM = true
	return m.global(key("coop", elem, uint32(rows), uint32(cols), uint32(use)), opTypeCoopMatrix, elem,
		m.cUint(3), m.cUint(uint32(rows)), m.cUint(uint32(cols)), m.cUint(uint32(use))) // scope Subgroup
}

func (m *module) extension(name string) {
	if m.exts == nil {
		m.exts = map[string]bool{}
	}
	m.exts[name] = true
}

func (m *module) tVec(elem, n uint32) uint32 {
	return m.global(key("vec", elem, n), opTypeVector, elem, n)
}
func (m *module) tPtr(class, elem uint32) uint32 {
	return m.global(key("ptr", class, elem), opTypePointer, class, elem)
}
func (m *module) tFunc(ret uint32) uint32 { return m.global(key("fn", ret), opTypeFunction, ret) }

// tStruct declares a struct of the given members; key names it for reuse.
func (m *module) tStruct(k string, members ...uint32) uint32 {
	return m.global(key("struct "+k, members...), opTypeStruct, members...)
}

// tBlock returns the Block-decorated struct {elem data[];} of a storage
// buffer whose elements have stride bytes.
func (m *module) tBlock(elem, stride uint32) uint32 {
	return m.once(key("block", elem), func() uint32 {
		arr := m.global(key("rtarray", elem), opTypeRuntimeArr, elem)
		m.decorate(arr, decArrayStride, stride)
		s := m.id()
		inst(&m.globals, opTypeStruct, s, arr)
		m.decorate(s, decBlock)
		inst(&m.annots, opMemberDecorate, s, 0, decOffset, 0)
		return s
	})
}

func key(prefix string, ids ...uint32) string {
	b := []byte(prefix)
	for _, x := range ids {
		b = strconv.AppendUint(append(b, ' '), uint64(x), 10)
	}
	return string(b)
}

// constant returns the constant of scalar type t with the given words (one
// for 32-bit types, two, low word first, for 64-bit ones).
func (m *module) constant(t uint32, words ...uint32) uint32 {
	return m.typed(key("const", append([]uint32{t}, words...)...), opConstant, t, words...)
}

func (m *module) cBool(b bool) uint32 {
	if b {
		return m.typed("true", opConstantTrue, m.tBool())
	}
	return m.typed("false", opConstantFalse, m.tBool())
}

func (m *module) cInt(v int32) uint32   { return m.constant(m.tInt(32, true), uint32(v)) }
func (m *module) cUint(v uint32) uint32 { return m.constant(m.tInt(32, false), v) }
func (m *module) cLong(v int64) uint32 {
	return m.constant(m.tInt(64, true), uint32(uint64(v)), uint32(uint64(v)>>32))
}
func (m *module) cFloat(v float32) uint32 { return m.constant(m.tFloat(32), math.Float32bits(v)) }
func (m *module) cDouble(v float64) uint32 {
	b := math.Float64bits(v)
	return m.constant(m.tFloat(64), uint32(b), uint32(b>>32))
}

// variable declares a global variable of storage class class holding a
// value of type t.
func (m *module) variable(class, t uint32) uint32 {
	id := m.id()
	inst(&m.globals, opVariable, m.tPtr(class, t), id, class)
	return id
}

// builtin declares the Input variable of a built-in uvec3 (such as
// builtInGlobalInvocationID), once, and lists it in the entry point's
// interface.
func (m *module) builtin(b uint32) uint32 {
	return m.once(key("builtin", b), func() uint32 {
		id := m.variable(scInput, m.tVec(m.tInt(32, false), 3))
		m.decorate(id, decBuiltIn, b)
		m.iface = append(m.iface, id)
		return id
	})
}

func (m *module) name(id uint32, s string) {
	inst(&m.names, opName, append([]uint32{id}, str(s)...)...)
}

func (m *module) decorate(id uint32, dec uint32, args ...uint32) {
	inst(&m.annots, opDecorate, append([]uint32{id, dec}, args...)...)
}

// Code of the current function.

// op appends an instruction with a result of type t and returns the result.
func (m *module) op(opc, t uint32, operands ...uint32) uint32 {
	id := m.id()
	inst(&m.code, opc, append([]uint32{t, id}, operands...)...)
	return id
}

// do appends an instruction without a result.
func (m *module) do(opc uint32, operands ...uint32) { inst(&m.code, opc, operands...) }

// ext applies GLSL.std.450 instruction n.
func (m *module) ext(t, n uint32, args ...uint32) uint32 {
	return m.op(opExtInst, t, append([]uint32{m.glsl, n}, args...)...)
}

// local declares a Function-class variable of type t.
func (m *module) local(t uint32) uint32 {
	id := m.id()
	inst(&m.fvars, opVariable, m.tPtr(scFunction, t), id, scFunction)
	return id
}

func (m *module) label(id uint32) { m.do(opLabel, id) }

// ifThen emits structured code that runs then only when cond holds.
func (m *module) ifThen(cond uint32, then func()) {
	body, merge := m.id(), m.id()
	m.do(opSelectionMerge, merge, 0)
	m.do(opBranchCond, cond, body, merge)
	m.label(body)
	then()
	m.do(opBranch, merge)
	m.label(merge)
}

// cases emits structured code that runs body(j) for j = sel (an int32 id)
// among 0 … n-1 (n-1 for any other), and returns the OpPhi of the values
// of type t that the bodies, blocks without branches, return (0 for t 0).
func (m *module) cases(sel uint32, n int, t uint32, body func(j int) uint32) uint32 {
	labels := make([]uint32, n)
	for j := range labels {
		labels[j] = m.id()
	}
	merge := m.id()
	m.do(opSelectionMerge, merge, 0)
	sw := []uint32{sel, labels[n-1]}
	for j := range n - 1 {
		sw = append(sw, uint32(j), labels[j])
	}
	m.do(opSwitch, sw...)
	var phi []uint32
	for j, l := range labels {
		m.label(l)
		phi = append(phi, body(j), l)
		m.do(opBranch, merge)
	}
	m.label(merge)
	if t == 0 {
		return 0
	}
	return m.op(opPhi, t, phi...)
}

// loop emits the structured loop for (v = lo; v < hi; v += step) over
// int32 values, calling body with the loaded counter.
func (m *module) loop(lo, hi, step uint32, body func(v uint32)) {
	i32 := m.tInt(32, true)
	ctr := m.local(i32)
	m.do(opStore, ctr, lo)
	header, check, start, cont, merge := m.id(), m.id(), m.id(), m.id(), m.id()
	m.do(opBranch, header)
	m.label(header)
	m.do(opLoopMerge, merge, cont, 0)
	m.do(opBranch, check)
	m.label(check)
	v := m.op(opLoad, i32, ctr)
	m.do(opBranchCond, m.op(opSLessThan, m.tBool(), v, hi), start, merge)
	m.label(start)
	body(v)
	m.do(opBranch, cont)
	m.label(cont)
	m.do(opStore, ctr, m.op(opIAdd, i32, m.op(opLoad, i32, ctr), step))
	m.do(opBranch, header)
	m.label(merge)
}

// words assembles the module: its compute entry point "main", of local
// size ls, runs the code built (which follows the function's first label).
func (m *module) words(ls [3]int) []uint32 {
	voidT := m.tVoid()
	fnT := m.tFunc(voidT)
	main, entryLabel := m.id(), m.id()
	m.name(main, "main")
	var fn []uint32
	inst(&fn, opFunction, voidT, main, 0, fnT)
	inst(&fn, opLabel, entryLabel)
	fn = append(fn, m.fvars...)
	fn = append(fn, m.code...)
	inst(&fn, opFunctionEnd)

	out := []uint32{0x07230203, 0x00010300, 0, m.bound, 0} // magic, version 1.3, generator, bound
	if len(m.preserve) > 0 {
		m.caps[capSignedZeroInfNanPreserve] = true
	}
	if m.vulkanMM {
		m.caps[capVulkanMemoryModel] = true
		m.extension("SPV_KHR_vulkan_memory_model")
	}
	var caps []int
	for c := range m.caps {
		caps = append(caps, int(c))
	}
	sort.Ints(caps)
	for _, c := range caps {
		inst(&out, opCapability, uint32(c))
	}
	if len(m.preserve) > 0 {
		inst(&out, opExtension, str("SPV_KHR_float_controls")...)
	}
	var exts []string
	for x := range m.exts {
		exts = append(exts, x)
	}
	sort.Strings(exts)
	for _, x := range exts {
		inst(&out, opExtension, str(x)...)
	}
	inst(&out, opExtInstImport, append([]uint32{m.glsl}, str("GLSL.std.450")...)...)
	model := uint32(1) // GLSL450
	if m.vulkanMM {
		model = 3 // Vulkan
	}
	inst(&out, opMemoryModel, 0, model)             // Logical
	ep := append([]uint32{5, main}, str("main")...) // GLCompute
	inst(&out, opEntryPoint, append(ep, m.iface...)...)
	inst(&out, opExecutionMode, main, 17, uint32(ls[0]), uint32(ls[1]), uint32(ls[2])) // LocalSize
	for _, w := range m.preserve {
		inst(&out, opExecutionMode, main, 4461, w) // SignedZeroInfNanPreserve
	}
	out = append(out, m.names...)
	out = append(out, m.annots...)
	out = append(out, m.globals...)
	return append(out, fn...)
}
