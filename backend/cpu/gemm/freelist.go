package gemm

// freeList keeps objects for reuse so that warm calls allocate nothing. Unlike sync.Pool it
// keeps no per-processor slots, which other processors cannot take from, and is not
// emptied by garbage collection: it holds at most as many objects as were ever in use at
// once (and never more than its capacity), which is what a call needs again.
type freeList[T any] struct {
	items chan *T
	alloc func() *T
}

func newFreeList[T any](capacity int, alloc func() *T) *freeList[T] {
	return &freeList[T]{items: make(chan *T, capacity), alloc: alloc}
}

// get returns a kept object, or a new one when none is kept.
func (f *freeList[T]) get() *T {
	select {
	case x := <-f.items:
		return x
	default:
		return f.alloc()
	}
}

// put keeps x for reuse, or drops it when the list is full.
func (f *freeList[T]) put(x *T) {
	select {
	case f.items <- x:
	default:
	}
}
