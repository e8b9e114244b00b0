package nn

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// Sizes. Building a model checks, before anything is allocated, that
//
//   - every per-sample shape (an Input's, every layer's output) and every
//     weight's shape has an element count that fits an int64 and a float32
//     tensor of that shape fits in tile.MaxBytes;
//   - the model's weights together (4 bytes a parameter) fit in the memory
//     the process may still allocate (backend.HostMemoryAvailable: on Linux
//     MemAvailable or its memory cgroups' room, on macOS hw.memsize), and
//     under TARTAN_MEMORY_LIMIT. Where the memory is unknown, the bound is
//     tile.MaxBytes.
//
// A model that fails a check is an error naming the layer, the shape and
// the bytes, not an out-of-memory crash.

// hostMemoryFresh is how long a reading of the host's available memory
// serves: Fit and the batch calls check their buffers on every call, and
// reading the memory (cgroup and /proc files on Linux) takes longer than a
// small model's training step on a GPU.
const hostMemoryFresh = time.Second

// readHostMemory reads the host's available memory. Tests replace it.
var readHostMemory = backend.HostMemoryAvailable

var hostMemory struct {
	sync.Mutex
	at    time.Time
	limit int64
	known bool
}

// hostMemoryAvailable is backend.HostMemoryAvailable's bytes, read at most
// once every hostMemoryFresh.
func hostMemoryAvailable() (int64, bool) {
	hostMemory.Lock()
	defer hostMemory.Unlock()
	if hostMemory.at.IsZero() || time.Since(hostMemory.at) >= hostMemoryFresh {
		hostMemory.limit, _, hostMemory.known = readHostMemory()
		hostMemory.at = time.Now()
	}
	return hostMemory.limit, hostMemory.known
}

// weightBytes is the storage of one parameter on the host.
const weightBytes = 4

// memoryLimit returns the bound on a model's weight bytes. Tests replace
// it.
var memoryLimit = hostMemoryLimit

// hostMemoryLimit returns the memory the process may still allocate
// (backend.HostMemoryAvailable; the machine's total where that is unknown),
// lowered to TARTAN_MEMORY_LIMIT, or tile.MaxBytes when none is known.
func hostMemoryLimit() int64 {
	limit, known := hostMemoryAvailable()
	if !known || limit <= 0 {
		limit = backend.HostMemory()
	}
	if v, err := backend.MemoryLimit(); err == nil && v > 0 && (limit <= 0 || v < limit) {
		limit = v // TARTAN_MEMORY_LIMIT (a malformed value is reported by the device)
	}
	if limit <= 0 {
		return tile.MaxBytes
	}
	return limit
}

// checkShapeStorage checks that a float32 tensor of shape s can exist:
// its element count fits an int64 and its bytes fit in tile.MaxBytes.
func checkShapeStorage(s tile.Shape) error { return s.CheckStorage(tile.Float32) }

// checkLayerSizes checks the weights and the per-sample output shape that
// building layer b produced.
func checkLayerSizes(b *layerBase, out tile.Shape) error {
	for _, w := range b.weights {
		if err := checkShapeStorage(w.shape); err != nil {
			return fmt.Errorf("weight %s: %v", w.short, err)
		}
	}
	if err := checkShapeStorage(out); err != nil {
		return fmt.Errorf("output %s per sample: %v", fmtShape(out), err)
	}
	return nil
}

// checkWeightMemory checks that the model's weights fit in memoryLimit,
// before any of them is allocated.
func (m *Model) checkWeightMemory() error {
	var total, params int64
	var largest *Weight
	var largestBytes int64
	for _, w := range m.weights {
		n, ok := w.shape.CheckedSize()
		b, bok := w.shape.Bytes(tile.Float32)
		if !ok || !bok || b > tile.MaxBytes {
			return fmt.Errorf("nn: %s %q: weight %s: %v", m.class, m.name, w.Name(), checkShapeStorage(w.shape))
		}
		// Each term is below 2^50, so the sums cannot overflow for any
		// realistic number of weights; check anyway.
		if total > math.MaxInt64-b {
			return fmt.Errorf("nn: %s %q: the weights together need more than %d bytes", m.class, m.name, int64(math.MaxInt64))
		}
		total += b
		params += int64(n)
		if largest == nil || b > largestBytes {
			largest, largestBytes = w, b
		}
	}
	if limit := memoryLimit(); total > limit {
		return fmt.Errorf("nn: %s %q: the weights need %d bytes (%d parameters of %d bytes), more than the %d bytes of memory this machine has; the largest weight is %s of shape %v (%d bytes)",
			m.class, m.name, total, params, weightBytes, limit, largest.Name(), largest.shape, largestBytes)
	}
	return nil
}

// checkedMul returns a·b for non-negative a and b, and false when the
// product overflows an int.
func checkedMul(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	if a != 0 && b > math.MaxInt/a {
		return 0, false
	}
	return a * b, true
}

// checkedAdd returns a+b for non-negative a and b, and false when the sum
// overflows an int.
func checkedAdd(a, b int) (int, bool) {
	if a < 0 || b < 0 || a > math.MaxInt-b {
		return 0, false
	}
	return a + b, true
}
