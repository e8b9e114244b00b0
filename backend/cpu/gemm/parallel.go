package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel execution splits C into a grid of rectangles aligned to the kernel's tile; each
// rectangle is computed by one goroutine, which packs its own panels: the goroutines share
// nothing but the read-only operands and write disjoint parts of C.
//
// The rectangles of a call form a job. Long-lived pool goroutines are told of the job and,
// like the calling goroutine, claim rectangles until none is left, so the caller computes
// whatever no helper has started and a call is never much slower than computing it alone.
// Handing work to a sleeping goroutine is slow on some machines (about 250 µs on the
// development machine's virtual CPUs, longer than a whole 256³ product), so pool
// goroutines poll for new jobs for workerSpin before they sleep, and the caller polls for
// its helpers to finish for as long before it sleeps.
//
// A job is reused for later calls as soon as its rectangles are finished, even though a
// notice of it may still wait for a sleeping helper: each use has a generation, and a
// helper can claim a rectangle only with a compare-and-swap on a word holding the
// generation it was told of, so a stale notice claims nothing. A call starts no goroutine
// and allocates nothing once the free lists are warm.

// minFlopsPerWorker is the least work (in floating-point operations) worth handing to a
// further goroutine: about ten microseconds of kernel time, well above the hand-off cost
// between awake goroutines.
const minFlopsPerWorker = 1 << 20

// maxWorkers caps the goroutines one call may use; it must fit claimWord's 16-bit fields.
const maxWorkers = 256

// workerSpin is how long a goroutine polls, yielding its processor in between, before it
// sleeps: a pool goroutine waiting for a job, or a caller waiting for its helpers.
const workerSpin = time.Millisecond

// rect is a rectangle of C: rows [i0, i1) and columns [j0, j1).
type rect struct{ i0, i1, j0, j1 int }

// job is one parallel call. Its plain fields are written by the caller before it
// publishes a new generation in claim, and only read by others after they claim a
// rectangle of that generation; the caller does not reuse the job before every claimed
// rectangle is finished.
type job struct {
	kn    *kernel
	op    operands
	rects []rect
	gen   uint32 // the current generation, owned by the caller
	// claim packs the generation (bits 32–63), the number of rectangles (16–31) and the
	// index of the next unclaimed one (0–15).
	claim    atomic.Uint64
	done     atomic.Int32  // rectangles of this generation finished
	finished chan struct{} // receives one value when the last rectangle is finished
}

// notice tells a pool goroutine of one generation of a job.
type notice struct {
	j   *job
	gen uint32
}

var jobs = newFreeList(maxWorkers, func() *job { return &job{finished: make(chan struct{}, 1)} })

// pool is the set of long-lived goroutines that help with jobs.
var pool struct {
	mu      sync.Mutex
	started int
	notices chan notice
}

func init() {
	pool.notices = make(chan notice, maxWorkers)
}

// ensureWorkers starts pool goroutines until at least n exist.
func ensureWorkers(n int) {
	pool.mu.Lock()
	for pool.started < n {
		pool.started++
		go poolWorker()
	}
	pool.mu.Unlock()
}

func poolWorker() {
	for {
		nt := nextNotice()
		nt.j.work(nt.gen)
	}
}

// nextNotice returns the next notice sent to the pool, polling for workerSpin before it
// sleeps.
func nextNotice() notice {
	start := time.Now()
	for {
		select {
		case nt := <-pool.notices:
			return nt
		default:
		}
		if time.Since(start) > workerSpin {
			return <-pool.notices
		}
		runtime.Gosched()
	}
}

// next claims the next rectangle of generation gen, reporting false when none is left or
// the job has moved on to another generation.
func (j *job) next(gen uint32) (int, bool) {
	for {
		w := j.claim.Load()
		count, idx := int(w>>16&0xffff), int(w&0xffff)
		if uint32(w>>32) != gen || idx >= count {
			return 0, false
		}
		if j.claim.CompareAndSwap(w, w+1) {
			return idx, true
		}
	}
}

// work claims and computes rectangles of generation gen until none is left.
func (j *job) work(gen uint32) {
	for {
		idx, ok := j.next(gen)
		if !ok {
			return
		}
		w := workspaces.get()
		r, count := j.rects[idx], len(j.rects)
		w.run(j.kn, &j.op, r.i0, r.i1, r.j0, r.j1)
		workspaces.put(w)
		// Once done counts this rectangle, the caller may reuse the job: touch nothing of
		// it but the channel, which is signalled only by the last rectangle.
		if int(j.done.Add(1)) == count {
			j.finished <- struct{}{}
		}
	}
}

// parallel computes op with kernel kn on up to workers goroutines (0 means GOMAXPROCS).
func parallel(kn *kernel, workers int, op *operands) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	flops := 2 * float64(op.m) * float64(op.n) * float64(op.k)
	workers = min(workers, maxWorkers, max(1, int(flops/minFlopsPerWorker)))
	wm, wn := grid(workers, op.m, op.n, op.k, kn)
	if wm*wn == 1 {
		w := workspaces.get()
		w.run(kn, op, 0, op.m, 0, op.n)
		workspaces.put(w)
		return
	}
	j := jobs.get()
	j.kn, j.op = kn, *op
	j.rects = j.rects[:0]
	for bi := 0; bi < wm; bi++ {
		i0, i1 := split(op.m, kn.mr, wm, bi)
		for bj := 0; bj < wn; bj++ {
			j0, j1 := split(op.n, kn.nr, wn, bj)
			if i0 < i1 && j0 < j1 {
				j.rects = append(j.rects, rect{i0, i1, j0, j1})
			}
		}
	}
	j.done.Store(0)
	j.gen++
	j.claim.Store(uint64(j.gen)<<32 | uint64(len(j.rects))<<16) // publishes the fields above
	// Helpers beyond GOMAXPROCS-1 could not run alongside the caller anyway. A notice that
	// does not fit the queue is dropped: the caller does that share itself.
	helpers := min(len(j.rects)-1, runtime.GOMAXPROCS(0)-1)
	ensureWorkers(helpers)
	for range helpers {
		select {
		case pool.notices <- notice{j, j.gen}:
		default:
		}
	}
	j.work(j.gen)
	// Wait for the helpers' rectangles, polling before sleeping.
	for start := time.Now(); int(j.done.Load()) < len(j.rects) && time.Since(start) < workerSpin; {
		runtime.Gosched()
	}
	<-j.finished
	j.op = operands{} // drop references to the caller's slices
	jobs.put(j)
}

// split returns block idx of `parts` near-equal blocks of [0, n), with block boundaries on
// multiples of unit so that only the last block has a partial tile.
func split(n, unit, parts, idx int) (lo, hi int) {
	tiles := (n + unit - 1) / unit
	lo = min(n, tiles*idx/parts*unit)
	hi = min(n, tiles*(idx+1)/parts*unit)
	return lo, hi
}

// grid chooses how many row blocks (wm) and column blocks (wn) to cut C into, with
// wm·wn ≤ workers. It minimises the estimated time of the slowest block: its multiply,
// with columns padded to whole tiles, plus the packing of its columns of B and the
// reading of its rows of A, which blocks in the same column (or row) repeat; so skinny
// shapes are split along their long side.
func grid(workers, m, n, k int, kn *kernel) (wm, wn int) {
	mr, nr := kn.mr, kn.nr
	best := -1.0
	wm, wn = 1, 1
	for pm := 1; pm <= workers; pm++ {
		for pn := 1; pm*pn <= workers; pn++ {
			rows := largestBlock(m, mr, pm)
			cols := largestBlock(n, nr, pn)
			if rows == 0 || cols == 0 {
				continue
			}
			// Padded columns cost kernel time (rows have a kernel of every size); each
			// block packs its own columns of B, at about the cost of a few multiply-adds
			// per value, and streams its rows of A from memory once per column block.
			padC := kn.padCols(cols)
			colBlocks := (cols + ncMax - 1) / ncMax
			cost := float64(k) * (float64(rows)*float64(padC) + 8*float64(cols) + float64(rows*colBlocks))
			if best < 0 || cost < best-1e-9*best || (cost <= best && pm*pn < wm*wn) {
				best, wm, wn = cost, pm, pn
			}
		}
	}
	return wm, wn
}

// largestBlock is the size of the largest of the blocks split(n, unit, parts, ·) makes,
// or 0 when some block would be empty.
func largestBlock(n, unit, parts int) int {
	largest := 0
	for idx := 0; idx < parts; idx++ {
		lo, hi := split(n, unit, parts, idx)
		if hi <= lo {
			return 0
		}
		largest = max(largest, hi-lo)
	}
	return largest
}
