package cpu

import (
	"sync"
	"sync/atomic"
)

// tasker is a parallel region: tasks numbered 0…n-1, each run once by some
// worker with that worker's index.
type tasker interface {
	runTask(worker, task int)
}

// workerPool is a set of long-lived goroutines that run the tasks of one
// parallel region at a time. The goroutine that calls run takes part as
// worker 0, so a region of one task costs nothing but the call; helpers are
// started on first use and woken through their own channels, so running a
// region allocates nothing.
type workerPool struct {
	n    int
	mu   sync.Mutex // one region at a time
	wake []chan struct{}
	once sync.Once
	// The current region.
	job   tasker
	tasks int
	next  atomic.Int64
	done  sync.WaitGroup
}

func newPool(workers int) *workerPool {
	return &workerPool{n: max(1, workers)}
}

func (p *workerPool) start() {
	p.wake = make([]chan struct{}, p.n)
	for w := 1; w < p.n; w++ {
		p.wake[w] = make(chan struct{}, 1)
		go p.worker(w, p.wake[w])
	}
}

// worker serves regions until its channel is closed; it gets the channel
// as an argument since close clears the pool's slot.
func (p *workerPool) worker(w int, wake <-chan struct{}) {
	for range wake {
		p.drain(w)
		p.done.Done()
	}
}

// drain runs tasks of the current region until none is left.
func (p *workerPool) drain(w int) {
	for {
		t := int(p.next.Add(1)) - 1
		if t >= p.tasks {
			return
		}
		p.job.runTask(w, t)
	}
}

// run executes tasks 0…tasks-1 of j on up to workers goroutines (0: all of
// the pool's) and returns when all are done.
func (p *workerPool) run(j tasker, tasks, workers int) {
	if tasks <= 0 {
		return
	}
	if workers <= 0 || workers > p.n {
		workers = p.n
	}
	helpers := min(workers, tasks) - 1
	if helpers == 0 {
		for t := range tasks {
			j.runTask(0, t)
		}
		return
	}
	p.once.Do(p.start)
	p.mu.Lock()
	p.job, p.tasks = j, tasks
	p.next.Store(0)
	p.done.Add(helpers)
	for w := 1; w <= helpers; w++ {
		p.wake[w] <- struct{}{}
	}
	p.drain(0)
	p.done.Wait()
	p.job = nil
	p.mu.Unlock()
}

// close stops the helper goroutines. The pool must be idle.
func (p *workerPool) close() {
	p.once.Do(func() {}) // a pool never started stays unstarted
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := 1; w < len(p.wake); w++ {
		if p.wake[w] != nil {
			close(p.wake[w])
			p.wake[w] = nil
		}
	}
}
