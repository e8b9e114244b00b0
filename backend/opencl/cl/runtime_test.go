package cl

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestListPlatformsAndDevices(t *testing.T) {
	ds := discoveredDevices(t)
	ps, err := Platforms()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		maj, min := p.OpenCLVersion()
		t.Logf("platform %q vendor %q version %q (%d.%d) via %s %s", p.Name, p.Vendor, p.Version, maj, min, p.Mode(), p.Library())
		if p.Name == "" || !strings.HasPrefix(p.Version, "OpenCL ") || maj < 1 {
			t.Errorf("platform %+v: empty name or malformed version", p)
		}
	}
	for _, d := range ds {
		i := d.Info()
		t.Logf("device %q type %v CUs %d wg %d items %v local %d global %d alloc %d vec %d bits %d, %s, %s, driver %s",
			i.Name, i.Type, i.MaxComputeUnits, i.MaxWorkGroupSize, i.MaxWorkItemSizes, i.LocalMemSize,
			i.GlobalMemSize, i.MaxMemAllocSize, i.PreferredVectorWidthFloat, i.AddressBits, i.Version, i.OpenCLCVersion, i.DriverVersion)
		switch {
		case i.Name == "" || i.Vendor == "":
			t.Errorf("%v: empty name or vendor", d)
		case !strings.HasPrefix(i.Version, "OpenCL "), !strings.HasPrefix(i.OpenCLCVersion, "OpenCL C "):
			t.Errorf("%v: malformed versions %q, %q", d, i.Version, i.OpenCLCVersion)
		case i.Type == 0:
			t.Errorf("%v: no device type", d)
		case i.MaxComputeUnits < 1 || i.MaxWorkGroupSize < 1 || len(i.MaxWorkItemSizes) < 3:
			t.Errorf("%v: implausible limits %+v", d, i)
		case i.MaxMemAllocSize == 0 || i.MaxMemAllocSize > i.GlobalMemSize || i.LocalMemSize == 0:
			t.Errorf("%v: implausible memory sizes %+v", d, i)
		case i.AddressBits != 32 && i.AddressBits != 64:
			t.Errorf("%v: address bits %d", d, i.AddressBits)
		case !i.Available || !i.CompilerAvailable:
			t.Errorf("%v: device or compiler unavailable", d)
		}
		if len(i.MaxWorkItemSizes) > 0 && i.MaxWorkItemSizes[0] < 1 {
			t.Errorf("%v: MaxWorkItemSizes %v", d, i.MaxWorkItemSizes)
		}
	}
}

func TestVectorAdd(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			p := s.build(t, vecAddSource, "")
			for _, n := range []int{1, 1000, 4099} {
				runVecAdd(t, s, p, n)
			}
		})
	}
}

const matMulSource = `
#define TILE 8
// C[M][N] = A[M][K] * B[K][N], row-major, with tiles staged in local memory.
__kernel void matmul(__global const float *A, __global const float *B, __global float *C,
                     const int M, const int N, const int K,
                     __local float *As, __local float *Bs) {
	int lr = get_local_id(1), lc = get_local_id(0);
	int row = get_global_id(1), col = get_global_id(0);
	float acc = 0.0f;
	for (int t = 0; t < K; t += TILE) {
		int ac = t + lc, br = t + lr;
		As[lr*TILE + lc] = (row < M && ac < K) ? A[row*K + ac] : 0.0f;
		Bs[lr*TILE + lc] = (br < K && col < N) ? B[br*N + col] : 0.0f;
		barrier(CLK_LOCAL_MEM_FENCE);
		for (int k = 0; k < TILE; k++) acc += As[lr*TILE + k] * Bs[k*TILE + lc];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (row < M && col < N) C[row*N + col] = acc;
}
`

func TestMatMul(t *testing.T) {
	const tile = 8
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			p := s.build(t, matMulSource, "")
			k := kernel(t, p, "matmul")
			for _, sz := range []struct{ m, n, k int }{{1, 1, 1}, {37, 29, 53}, {64, 16, 8}} {
				a, b := randomFloats(3, sz.m*sz.k), randomFloats(4, sz.k*sz.n)
				ba := s.buffer(t, Bytes(a), 4*len(a))
				bb := s.buffer(t, Bytes(b), 4*len(b))
				bc := s.buffer(t, nil, 4*sz.m*sz.n)
				for i, err := range []error{
					k.SetArgBuffer(0, ba), k.SetArgBuffer(1, bb), k.SetArgBuffer(2, bc),
					k.SetArgInt32(3, int32(sz.m)), k.SetArgInt32(4, int32(sz.n)), k.SetArgInt32(5, int32(sz.k)),
					k.SetArgLocal(6, 4*tile*tile), k.SetArgLocal(7, 4*tile*tile),
				} {
					if err != nil {
						t.Fatalf("SetArg %d: %v", i, err)
					}
				}
				up := func(x int) int { return (x + tile - 1) / tile * tile }
				r := NDRange{Global: []int{up(sz.n), up(sz.m)}, Local: []int{tile, tile}}
				if err := s.q.RunKernel(k, r); err != nil {
					t.Fatalf("RunKernel %v: %v", r, err)
				}
				c := make([]float32, sz.m*sz.n)
				if err := s.q.ReadBuffer(bc, 0, 4*len(c), Bytes(c)); err != nil {
					t.Fatal(err)
				}
				for i := range sz.m {
					for j := range sz.n {
						var want, mag float64
						for l := range sz.k {
							x := float64(a[i*sz.k+l]) * float64(b[l*sz.n+j])
							want += x
							mag += math.Abs(x)
						}
						// float32 accumulation error bound: K ulps of the
						// magnitude sum.
						tol := float64(sz.k) * mag * 0x1p-23
						if got := float64(c[i*sz.n+j]); math.Abs(got-want) > tol+1e-30 {
							t.Fatalf("%dx%dx%d: C[%d][%d] = %v, want %v (tol %g)", sz.m, sz.n, sz.k, i, j, got, want, tol)
						}
					}
				}
			}
		})
	}
}

func TestBuildFailureCarriesLog(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			p, err := s.ctx.NewProgramFromSource(`__kernel void broken(__global float *x) { x[0] = tartan_undeclared_name; }`)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release()
			err = p.Build("-cl-fast-relaxed-math")
			var be *BuildError
			if !errors.As(err, &be) {
				t.Fatalf("Build of broken source: got %v, want *BuildError", err)
			}
			if !IsCode(err, BuildProgramFailure) || be.Err.Name() != "CL_BUILD_PROGRAM_FAILURE" {
				t.Errorf("code %v, want CL_BUILD_PROGRAM_FAILURE", be.Err)
			}
			if !strings.Contains(be.Log(), "tartan_undeclared_name") {
				t.Errorf("build log does not name the culprit:\n%s", be.Log())
			}
			msg := err.Error()
			for _, want := range []string{"clBuildProgram", "CL_BUILD_PROGRAM_FAILURE", "tartan_undeclared_name", tg.dev.Name(), "-cl-fast-relaxed-math"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error message lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

func TestTransferBoundsAreErrors(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			b := s.buffer(t, nil, 1024)
			small := make([]byte, 16)
			cases := []struct {
				name string
				err  error
				want string
			}{
				{"read into too-small slice", s.q.ReadBuffer(b, 0, 1024, small), "host slice holds 16 bytes, 1024 requested"},
				{"write from too-small slice", s.q.WriteBuffer(b, 0, 64, small), "host slice holds 16 bytes, 64 requested"},
				{"read past end", s.q.ReadBuffer(b, 1020, 8, make([]byte, 8)), "outside the 1024-byte buffer"},
				{"negative offset", s.q.ReadBuffer(b, -1, 4, small), "negative offset"},
				{"copy past end", s.q.CopyBuffer(b, b, 0, 1000, 100), "outside the 1024-byte buffer"},
				{"fill bad pattern", s.q.FillBuffer(b, make([]byte, 3), 0, 12), "power of two"},
				{"fill misaligned", s.q.FillBuffer(b, make([]byte, 4), 2, 8), "multiples"},
			}
			for _, c := range cases {
				if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
					t.Errorf("%s: got %v, want an error containing %q", c.name, c.err, c.want)
				}
			}
			ev, err := s.q.EnqueueReadBuffer(b, 0, 1024, small)
			if err == nil || ev != nil {
				t.Errorf("non-blocking read into too-small slice: got %v, %v", ev, err)
			}
		})
	}
}

func TestProgramBinaryRoundTrip(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			src := s.build(t, vecAddSource, "")
			bin, err := src.Binary(s.dev)
			if err != nil {
				t.Fatalf("Binary: %v", err)
			}
			if len(bin) < 16 {
				t.Fatalf("binary of %d bytes", len(bin))
			}
			p, err := s.ctx.NewProgramFromBinary(s.dev, bin)
			if err != nil {
				t.Fatalf("NewProgramFromBinary: %v", err)
			}
			t.Cleanup(func() { p.Release() })
			if err := p.Build(""); err != nil {
				t.Fatalf("Build from binary: %v", err)
			}
			runVecAdd(t, s, p, 777)
			if _, err := s.ctx.NewProgramFromBinary(s.dev, nil); err == nil {
				t.Error("NewProgramFromBinary(nil) succeeded")
			}
		})
	}
}

func TestFillCopyAndNonBlockingTransfers(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			const n = 4096
			a := s.buffer(t, nil, 4*n)
			b := s.buffer(t, nil, 4*n)
			// Fill a with 1.5, copy its first half into b's second half, fill
			// b's first half with -2.
			if maj, min := tg.dev.Platform().OpenCLVersion(); s.q.CanFillBuffer() != (maj*10+min >= 12) {
				t.Fatalf("CanFillBuffer = %v on an OpenCL %d.%d platform", s.q.CanFillBuffer(), maj, min)
			}
			if !s.q.CanFillBuffer() {
				t.Skip("platform older than OpenCL 1.2")
			}
			pat := Bytes([]float32{1.5})
			if err := s.q.FillBuffer(a, pat, 0, 4*n); err != nil {
				t.Fatalf("FillBuffer: %v", err)
			}
			if err := s.q.FillBuffer(b, Bytes([]float32{-2}), 0, 2*n); err != nil {
				t.Fatalf("FillBuffer: %v", err)
			}
			if err := s.q.CopyBuffer(a, b, 0, 2*n, 2*n); err != nil {
				t.Fatalf("CopyBuffer: %v", err)
			}
			got := make([]float32, n)
			ev, err := s.q.EnqueueReadBuffer(b, 0, 4*n, Bytes(got))
			if err != nil {
				t.Fatalf("EnqueueReadBuffer: %v", err)
			}
			if err := ev.Wait(); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if st, err := ev.Status(); err != nil || st != StatusComplete {
				t.Errorf("status after Wait = %d, %v", st, err)
			}
			ev.Release()
			for i, v := range got {
				want := float32(-2)
				if i >= n/2 {
					want = 1.5
				}
				if v != want {
					t.Fatalf("b[%d] = %v, want %v", i, v, want)
				}
			}
			// Write then read back without blocking, chained by events.
			src := randomFloats(5, n)
			w, err := s.q.EnqueueWriteBuffer(a, 0, 4*n, Bytes(src))
			if err != nil {
				t.Fatal(err)
			}
			back := make([]float32, n)
			r, err := s.q.EnqueueReadBuffer(a, 0, 4*n, Bytes(back), w)
			if err != nil {
				t.Fatal(err)
			}
			if err := WaitForEvents(w, r); err != nil {
				t.Fatal(err)
			}
			w.Release()
			r.Release()
			if err := s.q.Finish(); err != nil {
				t.Fatal(err)
			}
			for i := range src {
				if back[i] != src[i] {
					t.Fatalf("round trip [%d] = %v, want %v", i, back[i], src[i])
				}
			}
			if len(s.q.holds) != 0 {
				t.Errorf("%d host holds left after Finish", len(s.q.holds))
			}
		})
	}
}

func TestProfilingAndKernelErrors(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, QueueProfiling)
			p := s.build(t, vecAddSource, "")
			if _, err := p.NewKernel("no_such_kernel"); !IsCode(err, InvalidKernelName) {
				t.Errorf("NewKernel(no_such_kernel): got %v, want CL_INVALID_KERNEL_NAME", err)
			}
			k := kernel(t, p, "vec_add")
			if n, err := k.NumArgs(); err != nil || n != 4 {
				t.Errorf("NumArgs = %d, %v; want 4", n, err)
			}
			err := k.SetArgInt32(9, 1)
			if !IsCode(err, InvalidArgIndex) || !strings.Contains(err.Error(), `kernel "vec_add" argument 9`) {
				t.Errorf("SetArgInt32(9): got %v, want CL_INVALID_ARG_INDEX naming the kernel", err)
			}
			const n = 256
			ba, bb, bc := s.buffer(t, Bytes(randomFloats(6, n)), 4*n), s.buffer(t, Bytes(randomFloats(7, n)), 4*n), s.buffer(t, nil, 4*n)
			k.SetArgBuffer(0, ba)
			k.SetArgBuffer(1, bb)
			k.SetArgBuffer(2, bc)
			k.SetArgInt32(3, n)
			wg, err := k.WorkGroupInfo(s.dev)
			if err != nil || wg.MaxSize < 1 {
				t.Fatalf("WorkGroupInfo = %+v, %v", wg, err)
			}
			ev, err := s.q.EnqueueKernel(k, NDRange{Global: []int{n}, Offset: []int{0}})
			if err != nil {
				t.Fatal(err)
			}
			if err := ev.Wait(); err != nil {
				t.Fatal(err)
			}
			pt, err := ev.Profile()
			ev.Release()
			if err != nil {
				t.Fatalf("Profile: %v", err)
			}
			if pt.Queued == 0 || pt.Submitted < pt.Queued || pt.Started < pt.Submitted || pt.Ended < pt.Started {
				t.Errorf("profile times out of order: %+v", pt)
			}
			tooBig := s.dev.Info().MaxWorkGroupSize * 2
			err = s.q.RunKernel(k, NDRange{Global: []int{tooBig}, Local: []int{tooBig}})
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), `kernel "vec_add"`) {
				t.Errorf("local size %d: got %v, want an *Error naming the kernel", tooBig, err)
			}
			for _, r := range []NDRange{{}, {Global: []int{1, 1, 1, 1}}, {Global: []int{8}, Local: []int{2, 2}}, {Global: []int{0}}} {
				if err := s.q.RunKernel(k, r); err == nil {
					t.Errorf("RunKernel(%v) succeeded", r)
				}
			}
		})
	}
}

func TestBufferAllocationErrors(t *testing.T) {
	for _, tg := range allTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := newSession(t, tg.dev, 0)
			info := s.dev.Info()
			// Beyond both the allocation limit and the whole memory: the
			// driver must refuse it at creation (CL_INVALID_BUFFER_SIZE) or,
			// if it allocates lazily (NVIDIA does), when first used.
			huge := max(info.MaxMemAllocSize, info.GlobalMemSize) + 1<<30
			if huge > math.MaxInt/2 {
				t.Skip("device memory beyond int range")
			}
			b, err := s.ctx.NewBuffer(MemReadWrite, int(huge))
			if err == nil {
				defer b.Release()
				err = s.q.WriteBuffer(b, int(huge)-1, 1, []byte{1})
				if err == nil {
					err = s.q.Finish()
				}
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("a %d-byte buffer on a device with %d bytes: got %v, want an OpenCL error", huge, info.GlobalMemSize, err)
			}
			t.Logf("%d-byte buffer: %v", huge, err)
			for _, c := range []struct {
				flags MemFlags
				size  int
			}{{MemReadWrite, 0}, {MemReadWrite, -5}, {memUseHostPtr, 64}, {memCopyHostPtr, 64}, {1 << 40, 64}} {
				if b, err := s.ctx.NewBuffer(c.flags, c.size); err == nil {
					b.Release()
					t.Errorf("NewBuffer(%#x, %d) succeeded", uint64(c.flags), c.size)
				}
			}
		})
	}
}
