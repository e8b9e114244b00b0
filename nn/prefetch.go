package nn

import "sync"

// prefetcher reads the batches of one epoch a step ahead of training: a
// goroutine fills one of two batch buffers while the step that uses the
// other is bound and launched. It calls Samples.Read from one goroutine at
// a time, in step order; once stop returns it no longer touches the
// samples.
type prefetcher struct {
	ready chan *batch
	free  chan *batch
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// batch is one step's inputs and targets: the first n samples of each of
// xs (one buffer per model input) and ys (one per target).
type batch struct {
	xs, ys [][]float32
	n      int
	err    error
}

// newBatch returns a batch of buffers for bs samples of ins values per
// input and tgts values per target.
func newBatch(bs int, ins, tgts []int) *batch {
	b := &batch{xs: make([][]float32, len(ins)), ys: make([][]float32, len(tgts))}
	for k, n := range ins {
		b.xs[k] = make([]float32, bs*n)
	}
	for k, n := range tgts {
		b.ys[k] = make([]float32, bs*n)
	}
	return b
}

// fits reports whether b's buffers are those newBatch(bs, ins, tgts)
// makes.
func (b *batch) fits(bs int, ins, tgts []int) bool {
	if len(b.xs) != len(ins) || len(b.ys) != len(tgts) {
		return false
	}
	for k, n := range ins {
		if len(b.xs[k]) != bs*n {
			return false
		}
	}
	for k, n := range tgts {
		if len(b.ys[k]) != bs*n {
			return false
		}
	}
	return true
}

// maxSpareBatches and maxSpareBytes bound the batch buffers a model keeps
// between calls: reuse matters for small steps, and large batches are not
// worth holding on to after the call.
const (
	maxSpareBatches = 4
	maxSpareBytes   = 64 << 20
)

// bytes returns the host bytes of b's buffers.
func (b *batch) bytes() int {
	n := 0
	for _, x := range b.xs {
		n += 4 * len(x)
	}
	for _, y := range b.ys {
		n += 4 * len(y)
	}
	return n
}

// takeBatches returns k batch buffers for bs samples, reusing those that
// earlier calls handed back (giveBatches) when their sizes match, so that
// calls one after another (a training step per Fit or TrainOnBatch call)
// neither allocate nor clear them each time. Buffers taken are not shared:
// a call nested in another (a callback evaluating during Fit) gets its own.
func (m *Model) takeBatches(k, bs int, ins, tgts []int) []*batch {
	out := make([]*batch, 0, k)
	kept := m.spare[:0]
	for _, b := range m.spare {
		if len(out) < k && b.fits(bs, ins, tgts) {
			out = append(out, b)
		} else {
			kept = append(kept, b)
		}
	}
	clear(m.spare[len(kept):])
	m.spare = kept
	for len(out) < k {
		out = append(out, newBatch(bs, ins, tgts))
	}
	return out
}

// giveBatches hands buffers from takeBatches back for later calls, keeping
// the most recent ones within maxSpareBatches and maxSpareBytes.
func (m *Model) giveBatches(bufs ...*batch) {
	for _, b := range bufs {
		b.n, b.err = 0, nil
	}
	m.spare = append(m.spare, bufs...)
	keep, total := 0, 0
	for i := len(m.spare) - 1; i >= 0 && keep < maxSpareBatches; i-- {
		if total += m.spare[i].bytes(); total > maxSpareBytes {
			break
		}
		keep++
	}
	drop := len(m.spare) - keep
	copy(m.spare, m.spare[drop:])
	clear(m.spare[keep:])
	m.spare = m.spare[:keep]
}

// bind adds the first n samples of the batch's buffers to a step's inputs
// under their graph names (inputName, targetName).
func (b *batch) bind(inputs map[string]any, n int, ins, tgts []int) {
	for k, x := range b.xs {
		inputs[inputName(k)] = x[:n*ins[k]]
	}
	for k, y := range b.ys {
		inputs[targetName(k)] = y[:n*tgts[k]]
	}
}

// view returns the first n samples of each buffer, as ReadMulti fills
// them.
func (b *batch) view(n int, ins, tgts []int) (xs, ys [][]float32) {
	xs = make([][]float32, len(b.xs))
	for k, x := range b.xs {
		xs[k] = x[:n*ins[k]]
	}
	ys = make([][]float32, len(b.ys))
	for k, y := range b.ys {
		ys[k] = y[:n*tgts[k]]
	}
	return xs, ys
}

// startPrefetch starts reading the batches of size bs taken in order from
// s into bufs, whose buffers hold bs samples of ins values per input and
// tgts values per target.
func startPrefetch(s MultiSamples, order []int, bs int, ins, tgts []int, bufs []*batch) *prefetcher {
	p := &prefetcher{ready: make(chan *batch, len(bufs)), free: make(chan *batch, len(bufs)),
		quit: make(chan struct{}), done: make(chan struct{})}
	for _, b := range bufs {
		p.free <- b
	}
	go func() {
		defer close(p.done)
		for lo := 0; lo < len(order); lo += bs {
			var b *batch
			select {
			case b = <-p.free:
			case <-p.quit:
				return
			}
			idx := order[lo:min(lo+bs, len(order))]
			b.n = len(idx)
			xs, ys := b.view(b.n, ins, tgts)
			b.err = s.ReadMulti(idx, xs, ys)
			select {
			case p.ready <- b:
			case <-p.quit:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return p
}

// next returns the next batch; the caller hands it back with release once
// its data has been bound.
func (p *prefetcher) next() *batch { return <-p.ready }

func (p *prefetcher) release(b *batch) { p.free <- b }

// stop ends the reading and waits for the goroutine. Calling it again does
// nothing.
func (p *prefetcher) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.done
}
