package spirv

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// A plain interpreter of the SPIR-V subset Emit produces, for checking the
// meaning of emitted modules against kir.Interpret without a Vulkan device.
// Results the specification leaves undefined (conversions of values out of
// range, division by zero, GLSL functions outside their domains) come out
// as poison values, so that a guard the emitter forgot shows in the
// results; reads and writes outside a buffer fail.

type spvType struct {
	op      uint32 // the declaring opcode
	width   uint32 // ints and floats
	signed  bool
	elem    uint32 // vectors, pointers, arrays
	n       uint32 // vector length; a cooperative matrix's rows
	members []uint32
	// Cooperative matrices: columns and use (0: A, 1: B, 2: accumulator);
	// 16-bit floats: bf16 for bfloat16.
	cols, use uint32
	bf16      bool
}

// val is a value: a scalar's bits (integers zero-extended from their
// width), a composite's parts, or a pointer.
type val struct {
	b   uint64
	v   []val
	p   *ptr
	set bool
}

// ptr addresses a storage-buffer element, a push-constant word, a
// Function variable or the invocation id.
type ptr struct {
	class   uint32
	binding int
	index   int    // element (storage) or member (push constant)
	local   uint32 // Function variable id
}

type spvInst struct {
	op uint32
	w  []uint32
}

type spvModule struct {
	types     map[uint32]spvType
	valueType map[uint32]uint32 // the type of every constant, variable and result
	init      []val             // constants and global variables by id
	binding   map[uint32]int
	code      []spvInst
	labels    map[uint32]int
	localSize [3]int
	builtin   map[uint32]uint32 // the BuiltIn of each Input variable
	barrier   bool              // the code has OpControlBarrier
}

func parseModule(words []uint32) (*spvModule, error) {
	if len(words) < 5 || words[0] != 0x07230203 {
		return nil, fmt.Errorf("not a SPIR-V module")
	}
	m := &spvModule{types: map[uint32]spvType{}, valueType: map[uint32]uint32{}, init: make([]val, words[3]),
		binding: map[uint32]int{}, labels: map[uint32]int{}, builtin: map[uint32]uint32{}}
	vars := map[uint32]uint32{}
	inFn := false
	for w := words[5:]; len(w) > 0; {
		n := int(w[0] >> 16)
		if n == 0 || n > len(w) {
			return nil, fmt.Errorf("bad instruction length")
		}
		op, a := w[0]&0xffff, w[1:n]
		w = w[n:]
		if inFn {
			switch op {
			case opLabel:
				m.labels[a[0]] = len(m.code)
			case opControlBarrier:
				m.barrier = true
			case opBranch, opBranchCond, opSelectionMerge, opLoopMerge, opReturn, opStore, opFunctionEnd, opCoopMatrixStore:
			default:
				m.valueType[a[1]] = a[0]
			}
			m.code = append(m.code, spvInst{op, a})
			continue
		}
		switch op {
		case opExecutionMode:
			if a[1] == 17 { // LocalSize; SignedZeroInfNanPreserve changes nothing here
				m.localSize = [3]int{int(a[2]), int(a[3]), int(a[4])}
			}
		case opDecorate:
			switch a[1] {
			case decBinding:
				m.binding[a[0]] = int(a[2])
			case decBuiltIn:
				m.builtin[a[0]] = a[2]
			}
		case opTypeVoid, opTypeBool, opTypeFunction:
			m.types[a[0]] = spvType{op: op}
		case opTypeInt:
			m.types[a[0]] = spvType{op: op, width: a[1], signed: a[2] == 1}
		case opTypeFloat:
			m.types[a[0]] = spvType{op: op, width: a[1], bf16: len(a) > 2 && a[2] == 0}
		case opTypeCoopMatrix:
			if m.init[a[2]].b != 3 {
				return nil, fmt.Errorf("cooperative matrix of scope %d, not Subgroup", m.init[a[2]].b)
			}
			m.types[a[0]] = spvType{op: op, elem: a[1], n: uint32(m.init[a[3]].b), cols: uint32(m.init[a[4]].b), use: uint32(m.init[a[5]].b)}
		case opConstantNull:
			t := m.types[a[0]]
			m.init[a[1]], m.valueType[a[1]] = val{v: make([]val, t.n*t.cols), set: true}, a[0]
		case opTypeVector:
			m.types[a[0]] = spvType{op: op, elem: a[1], n: a[2]}
		case opTypeArray:
			m.types[a[0]] = spvType{op: op, elem: a[1], n: uint32(m.init[a[2]].b)}
		case opTypeRuntimeArr:
			m.types[a[0]] = spvType{op: op, elem: a[1]}
		case opTypeStruct:
			m.types[a[0]] = spvType{op: op, members: a[1:]}
		case opTypePointer:
			m.types[a[0]] = spvType{op: op, n: a[1], elem: a[2]}
		case opConstant:
			b := uint64(a[2])
			if len(a) > 3 {
				b |= uint64(a[3]) << 32
			}
			m.init[a[1]], m.valueType[a[1]] = val{b: b, set: true}, a[0]
		case opConstantTrue, opConstantFalse:
			m.init[a[1]], m.valueType[a[1]] = val{b: boolBits(op == opConstantTrue), set: true}, a[0]
		case opVariable:
			vars[a[1]] = a[2]
			m.valueType[a[1]] = a[0]
		case opFunction:
			inFn = true
		}
	}
	for id, class := range vars {
		b, ok := m.binding[id]
		if !ok {
			b = -1
		}
		if class == scInput {
			b = int(m.builtin[id])
		}
		m.init[id] = val{p: &ptr{class: class, binding: b, local: id}, set: true}
	}
	return m, nil
}

func boolBits(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// invocation is one run of the entry point.
type invocation struct {
	m       *spvModule
	wg, lid [3]uint32 // the work-group's and the invocation's ids
	// shared holds the work-group's Workgroup arrays; barrier waits for
	// the rest of the work-group.
	shared  map[uint32][]val
	barrier func() error
	push    []uint32
	bufs    [][]byte // storage of each binding
	env     []val
	locals  map[uint32]val
}

func (in *invocation) get(id uint32) val {
	if v := in.env[id]; v.set {
		return v
	}
	panic(fmt.Sprintf("id %d used before its definition", id))
}

// pointee returns the type a pointer id points to.
func (in *invocation) pointee(id uint32) spvType {
	return in.m.types[in.m.types[in.m.valueType[id]].elem]
}

func (in *invocation) load(t uint32, p *ptr) (val, error) {
	switch p.class {
	case scPushConstant:
		return val{b: uint64(in.push[p.index])}, nil
	case scFunction:
		return in.locals[p.local], nil
	case scInput:
		var v [3]uint32
		for i := range v {
			switch p.binding {
			case builtInGlobalInvocationID:
				v[i] = in.wg[i]*uint32(in.m.localSize[i]) + in.lid[i]
			case builtInWorkgroupID:
				v[i] = in.wg[i]
			case builtInLocalInvocationID:
				v[i] = in.lid[i]
			default:
				return val{}, fmt.Errorf("load of built-in %d", p.binding)
			}
		}
		return val{v: []val{{b: uint64(v[0]), set: true}, {b: uint64(v[1]), set: true}, {b: uint64(v[2]), set: true}}}, nil
	case scWorkgroup:
		arr := in.shared[p.local]
		if p.index < 0 || p.index >= len(arr) {
			return val{}, fmt.Errorf("shared array %d: read of element %d of %d", p.local, p.index, len(arr))
		}
		if !arr[p.index].set {
			return val{}, fmt.Errorf("shared array %d: read of element %d before any write", p.local, p.index)
		}
		return arr[p.index], nil
	}
	w := in.m.types[t].width / 8
	buf := in.bufs[p.binding]
	off := p.index * int(w)
	if p.index < 0 || off+int(w) > len(buf) {
		return val{}, fmt.Errorf("binding %d: read of element %d outside its %d bytes", p.binding, p.index, len(buf))
	}
	if w == 8 {
		return val{b: binary.LittleEndian.Uint64(buf[off:])}, nil
	}
	return val{b: uint64(binary.LittleEndian.Uint32(buf[off:]))}, nil
}

func (in *invocation) store(p *ptr, v val, t spvType) error {
	switch p.class {
	case scFunction:
		in.locals[p.local] = v
		return nil
	case scWorkgroup:
		arr := in.shared[p.local]
		if p.index < 0 || p.index >= len(arr) {
			return fmt.Errorf("shared array %d: write of element %d of %d", p.local, p.index, len(arr))
		}
		v.set = true
		arr[p.index] = v
		return nil
	case scStorageBuffer:
		w := int(t.width / 8)
		buf := in.bufs[p.binding]
		off := p.index * w
		if p.index < 0 || off+w > len(buf) {
			return fmt.Errorf("binding %d: write of element %d outside its %d bytes", p.binding, p.index, len(buf))
		}
		if w == 8 {
			binary.LittleEndian.PutUint64(buf[off:], v.b)
		} else {
			binary.LittleEndian.PutUint32(buf[off:], uint32(v.b))
		}
		return nil
	}
	return fmt.Errorf("store to storage class %d", p.class)
}

const poison = 0x5A5A5A5A5A5A5A5A

func sext(b uint64, w uint32) int64 { return int64(b<<(64-w)) >> (64 - w) }
func trunc(x uint64, w uint32) uint64 {
	if w == 64 {
		return x
	}
	return x & (1<<w - 1)
}
func fl(b uint64, w uint32) float64 {
	if w == 32 {
		return float64(math.Float32frombits(uint32(b)))
	}
	return math.Float64frombits(b)
}
func fbits(x float64, w uint32) uint64 {
	if w == 32 {
		return uint64(math.Float32bits(float32(x)))
	}
	return math.Float64bits(x)
}

// run executes the entry point once.
func (in *invocation) run() error {
	m := in.m
	if in.env == nil {
		in.env = make([]val, len(m.init))
	}
	copy(in.env, m.init)
	in.locals = map[uint32]val{}
	pc := 0
	for steps := 0; ; steps++ {
		if pc >= len(m.code) || steps > 1e8 {
			return fmt.Errorf("ran off the function")
		}
		ins := m.code[pc]
		pc++
		a := ins.w
		jump := func(label uint32) { pc = m.labels[label] }
		switch ins.op {
		case opFunction, opLabel, opSelectionMerge, opLoopMerge:
			continue
		case opReturn:
			return nil
		case opControlBarrier:
			if err := in.barrier(); err != nil {
				return err
			}
			continue
		case opBranch:
			jump(a[0])
			continue
		case opBranchCond:
			if in.get(a[0]).b != 0 {
				jump(a[1])
			} else {
				jump(a[2])
			}
			continue
		case opVariable:
			in.env[a[1]] = val{p: &ptr{class: scFunction, local: a[1]}, set: true}
			continue
		case opStore:
			if err := in.store(in.get(a[0]).p, in.get(a[1]), in.pointee(a[0])); err != nil {
				return err
			}
			continue
		case opCoopMatrixStore:
			if err := in.coopStore(a); err != nil {
				return err
			}
			continue
		}
		rt, id := m.types[a[0]], a[1]
		var r val
		var err error
		switch ins.op {
		case opLoad:
			r, err = in.load(a[0], in.get(a[2]).p)
			if p := in.get(a[2]).p; p.class == scFunction {
				if _, ok := in.locals[p.local]; !ok {
					return fmt.Errorf("load of variable %d before any store", p.local)
				}
			}
		case opAccessChain:
			base := in.get(a[2]).p
			q := *base
			if base.class == scPushConstant || base.class == scWorkgroup {
				q.index = int(in.get(a[3]).b)
			} else {
				q.index = int(sext(in.get(a[4]).b, 32))
			}
			r = val{p: &q}
		case opCompositeExtr:
			r = in.get(a[2]).v[a[3]]
		case opExtInst:
			r = in.ext(rt, a[3], a[4:])
		case opCoopMatrixLoad:
			r, err = in.coopLoad(rt, a)
		case opCoopMatrixMulAdd:
			r, err = in.coopMulAdd(rt, a)
		default:
			r, err = in.alu(ins.op, rt, a)
		}
		if err != nil {
			return err
		}
		r.set = true
		in.env[id] = r
	}
}

func (in *invocation) alu(op uint32, rt spvType, a []uint32) (val, error) {
	x := func(i int) val { return in.get(a[2+i]) }
	t0 := func() spvType { return in.typeOf(a[2]) }
	w := rt.width
	switch op {
	case opSelect:
		if x(0).b != 0 {
			return x(1), nil
		}
		return x(2), nil
	case opBitcast:
		return val{b: x(0).b}, nil
	case opSNegate:
		return val{b: trunc(-x(0).b, w)}, nil
	case opIAdd:
		return val{b: trunc(x(0).b+x(1).b, w)}, nil
	case opISub:
		return val{b: trunc(x(0).b-x(1).b, w)}, nil
	case opIMul:
		return val{b: trunc(x(0).b*x(1).b, w)}, nil
	case opSDiv, opSRem:
		p, q := sext(x(0).b, w), sext(x(1).b, w)
		if q == 0 || (q == -1 && p == math.MinInt64>>(64-w)) {
			return val{b: trunc(poison, w)}, nil
		}
		if op == opSDiv {
			return val{b: trunc(uint64(p/q), w)}, nil
		}
		return val{b: trunc(uint64(p%q), w)}, nil
	case opUDiv, opUMod:
		if x(1).b == 0 {
			return val{b: trunc(poison, w)}, nil
		}
		if op == opUDiv {
			return val{b: x(0).b / x(1).b}, nil
		}
		return val{b: x(0).b % x(1).b}, nil
	case opUMulExtended:
		hi, lo := bits.Mul32(uint32(x(0).b), uint32(x(1).b))
		return val{v: []val{{b: uint64(lo), set: true}, {b: uint64(hi), set: true}}}, nil
	case opShiftRightLogic:
		return val{b: x(0).b >> x(1).b}, nil
	case opBitwiseXor:
		return val{b: x(0).b ^ x(1).b}, nil
	case opSConvert:
		return val{b: trunc(uint64(sext(x(0).b, t0().width)), w)}, nil
	case opUConvert:
		return val{b: trunc(x(0).b, w)}, nil
	case opConvertSToF:
		return val{b: fbits(float64(sext(x(0).b, t0().width)), w)}, nil
	case opConvertUToF:
		return val{b: fbits(float64(x(0).b), w)}, nil
	case opConvertFToS:
		f := math.Trunc(fl(x(0).b, t0().width))
		if !(f >= -math.Ldexp(1, int(w)-1) && f < math.Ldexp(1, int(w)-1)) {
			return val{b: trunc(poison, w)}, nil
		}
		return val{b: trunc(uint64(int64(f)), w)}, nil
	case opFConvert:
		if w == 16 {
			return val{b: halfBits(fl(x(0).b, t0().width), rt.bf16)}, nil
		}
		return val{b: fbits(fl(x(0).b, t0().width), w)}, nil
	case opFNegate:
		return val{b: fbits(-fl(x(0).b, w), w)}, nil
	case opFAdd, opFSub, opFMul, opFDiv:
		p, q := fl(x(0).b, w), fl(x(1).b, w)
		r := map[uint32]float64{opFAdd: p + q, opFSub: p - q, opFMul: p * q}[op]
		if op == opFDiv {
			r = p / q
		}
		return val{b: fbits(r, w)}, nil
	case opIsNan, opIsInf:
		f := fl(x(0).b, t0().width)
		if op == opIsNan {
			return val{b: boolBits(math.IsNaN(f))}, nil
		}
		return val{b: boolBits(math.IsInf(f, 0))}, nil
	case opLogicalEqual, opLogicalNotEqual, opLogicalOr, opLogicalAnd:
		p, q := x(0).b != 0, x(1).b != 0
		return val{b: boolBits(map[uint32]bool{opLogicalEqual: p == q, opLogicalNotEqual: p != q, opLogicalOr: p || q, opLogicalAnd: p && q}[op])}, nil
	case opLogicalNot:
		return val{b: boolBits(x(0).b == 0)}, nil
	case opIEqual, opINotEqual, opSGreaterThan, opSGreaterEqual, opULessThan, opSLessThan, opSLessEqual:
		tw := t0().width
		p, q := sext(x(0).b, tw), sext(x(1).b, tw)
		return val{b: boolBits(map[uint32]bool{opIEqual: p == q, opINotEqual: p != q, opSGreaterThan: p > q,
			opSGreaterEqual: p >= q, opULessThan: x(0).b < x(1).b, opSLessThan: p < q, opSLessEqual: p <= q}[op])}, nil
	case opFOrdEqual, opFUnordNotEqual, opFOrdLessThan, opFOrdGreaterThan, opFOrdLessEqual, opFOrdGreaterEq:
		tw := t0().width
		p, q := fl(x(0).b, tw), fl(x(1).b, tw)
		return val{b: boolBits(map[uint32]bool{opFOrdEqual: p == q, opFUnordNotEqual: !(p == q), opFOrdLessThan: p < q,
			opFOrdGreaterThan: p > q, opFOrdLessEqual: p <= q, opFOrdGreaterEq: p >= q}[op])}, nil
	}
	return val{}, fmt.Errorf("opcode %d is not interpreted", op)
}

// typeOf returns the type of a value id: constants and results alike.
func (in *invocation) typeOf(id uint32) spvType { return in.m.types[in.m.valueType[id]] }

func (in *invocation) ext(rt spvType, n uint32, a []uint32) val {
	w := rt.width
	if n == glslFrexpStruct {
		w = in.m.types[rt.members[0]].width
		fr, ex := math.Frexp(fl(in.get(a[0]).b, w))
		return val{v: []val{{b: fbits(fr, w), set: true}, {b: trunc(uint64(ex), 32), set: true}}}
	}
	x := func(i int) float64 { return fl(in.get(a[i]).b, w) }
	var r float64
	undefined := false
	switch n {
	case glslFAbs:
		r = math.Abs(x(0))
	case glslFloor:
		r = math.Floor(x(0))
	case glslCeil:
		r = math.Ceil(x(0))
	case glslTanh:
		r = math.Tanh(x(0))
	case glslExp:
		r = math.Exp(x(0))
	case glslLog:
		r, undefined = math.Log(x(0)), !(x(0) > 0)
	case glslSqrt:
		r, undefined = math.Sqrt(x(0)), !(x(0) >= 0)
	case glslInverseSqrt:
		r, undefined = 1/math.Sqrt(x(0)), !(x(0) > 0)
	case glslPow:
		r, undefined = math.Pow(x(0), x(1)), !(x(0) > 0 || x(0) == 0 && x(1) > 0)
	case glslLdexp:
		ex := int(sext(in.get(a[1]).b, 32))
		r, undefined = math.Ldexp(x(0), ex), ex > 1023 || math.IsInf(math.Ldexp(x(0), ex), 0)
	case glslFMin, glslFMax:
		r, undefined = math.Min(x(0), x(1)), math.IsNaN(x(0)) || math.IsNaN(x(1))
		if n == glslFMax {
			r = math.Max(x(0), x(1))
		}
	default:
		panic(fmt.Sprintf("GLSL.std.450 instruction %d is not interpreted", n))
	}
	if undefined {
		return val{b: fbits(12345.678, w)}
	}
	return val{b: fbits(r, w)}
}
