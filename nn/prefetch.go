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

// batch is one step's inputs and targets: the first n samples of x and y.
type batch struct {
	x, y []float32
	n    int
	err  error
}

// startPrefetch starts reading the batches of size bs taken in order from
// s into bufs, whose x and y hold bs samples of in and tgt values.
func startPrefetch(s Samples, order []int, bs, in, tgt int, bufs []*batch) *prefetcher {
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
			b.err = s.Read(idx, b.x[:b.n*in], b.y[:b.n*tgt])
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
