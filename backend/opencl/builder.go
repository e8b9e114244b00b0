package opencl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/kir"
)

// Builder processes. Some drivers compile one program at a time per
// process whatever the number of threads (NVIDIA's does: eight concurrent
// builds take as long as eight in a row), so a large program is built in
// shards (render_shard.go) by helper processes at once. A helper is the
// running executable itself, started with EnvBuilder naming the device: the
// package's init function sees the variable and, instead of letting the
// program run, serves build requests until its parent closes the pipe. A
// helper returns the program binary; the parent loads it (and caches it)
// as it loads binaries from the disk cache.
//
// Any failure of a helper (it cannot start, the device is not found, it
// dies) is not an error: the shard is then built in-process, which also
// reports build errors with their logs.

// EnvBuilder is the environment variable that turns a process into a
// builder of programs for the device it names ("opencl:<platform>:<device>").
// Tartan sets it for its own helper processes; TARTAN_OPENCL_BUILDERS=0
// keeps every build in-process.
const EnvBuilder = "TARTAN_OPENCL_BUILDER"

// envBuilders sets the number of helper processes (0: none).
const envBuilders = "TARTAN_OPENCL_BUILDERS"

func init() {
	if id := os.Getenv(EnvBuilder); id != "" {
		os.Exit(serveBuilds(id))
	}
}

// buildRequest and buildReply cross the pipes between parent and helper as
// JSON lines. The first reply, to no request, says whether the helper is
// ready.
type buildRequest struct {
	Source  string
	Options string
}

type buildReply struct {
	Device string `json:",omitempty"` // in the first reply
	Binary []byte `json:",omitempty"`
	Err    string `json:",omitempty"`
}

// serveBuilds is a helper's whole life: open the device's context, then
// build each request read from file descriptor 3, replying on 4.
func serveBuilds(id string) int {
	in, out := os.NewFile(3, "requests"), os.NewFile(4, "replies")
	if in == nil || out == nil {
		fmt.Fprintf(os.Stderr, "opencl: %s is set (%s) but the process has no request pipes\n", EnvBuilder, id)
		return 2
	}
	enc, dec := json.NewEncoder(out), json.NewDecoder(in)
	start := time.Now()
	ctx, dev, err := builderContext(id)
	if debugOn("timing") {
		fmt.Fprintf(os.Stderr, "opencl: builder helper %d opened %s in %.3f s\n", os.Getpid(), id, time.Since(start).Seconds())
	}
	if err != nil {
		enc.Encode(buildReply{Err: err.Error()})
		return 1
	}
	defer ctx.Release()
	if enc.Encode(buildReply{Device: dev.Name()}) != nil {
		return 1
	}
	for {
		var req buildRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			return 1
		}
		var rep buildReply
		p, err := ctx.NewProgramFromSource(req.Source)
		if err == nil {
			if err = p.Build(req.Options); err == nil {
				rep.Binary, err = p.Binary(dev)
			}
			p.Release()
		}
		if err != nil {
			rep.Err = err.Error()
		}
		if enc.Encode(rep) != nil {
			return 1
		}
	}
}

// builderContext opens a context on the listed device id.
func builderContext(id string) (*cl.Context, *cl.Device, error) {
	cs, err := List()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range cs {
		if c.ID == id {
			ctx, err := cl.NewContext(c.Device)
			return ctx, c.Device, err
		}
	}
	return nil, nil, fmt.Errorf("opencl: builder: no device %s", id)
}

// builderPool is a device's set of helper processes, started when a
// program needs building and stopped once they have been idle for
// builderIdle (each holds a context on the device). Helpers start in the
// background and take builds as each becomes ready, so that the first
// builds do not wait for the last helper.
type builderPool struct {
	mu       sync.Mutex
	free     chan *builder // ready helpers; a nil stands for one that failed
	all      []*builder
	gen      int           // counts the pool's starts, so that a late helper of a stopped pool stops
	spawned  int           // helpers started in this generation (some may still be starting)
	opening  chan struct{} // bounds the helpers opening the device at once
	failures int           // of those, the ones that could not start
	failed   bool          // no helper could be started: build in-process from now on
	busy     int
	idle     *time.Timer
	built    atomic.Int64 // programs the helpers built, for tests
}

// builderIdle is how long helpers wait for more work before they stop.
const builderIdle = 5 * time.Second

// builder is one helper process as its parent sees it.
type builder struct {
	enc  *json.Encoder
	dec  *json.Decoder
	stop func() // closes the pipes and waits for the process
	kill func() // ends the process at once
}

// builderTimeout bounds one build by a helper; a helper that takes longer
// is presumed stuck, killed, and the shard built in-process.
var builderTimeout = 5 * time.Minute

// poolSize is the number of helpers to start: one per spare processor, at
// most maxHelpers, or what TARTAN_OPENCL_BUILDERS says.
func poolSize() int {
	if s := os.Getenv(envBuilders); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			return min(n, 4*maxHelpers)
		}
	}
	return min(runtime.NumCPU()-1, maxHelpers)
}

// maxHelpers bounds the helper processes of a device.
const maxHelpers = 16

// acquire makes sure that want helpers (at most poolSize) are started or
// starting for device d and reports whether builds may be given to them; a
// true result must be paired with release. A pool grows to what its
// largest build wanted: every helper opens the device, and the time that
// takes grows with the number opening it at once, so a small program does
// not start helpers it has no work for.
func (bp *builderPool) acquire(d *Device, want int) bool {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if bp.idle != nil {
		bp.idle.Stop()
		bp.idle = nil
	}
	if want = min(want, poolSize()); want < 1 || bp.failed {
		return false
	}
	if bp.spawned > 0 && bp.failures == bp.spawned {
		return false
	}
	if bp.spawned < want {
		bp.spawn(d, want-bp.spawned)
	}
	bp.busy++
	return true
}

// release ends a use begun by acquire.
func (bp *builderPool) release() {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.busy--
	if bp.busy == 0 {
		bp.idle = time.AfterFunc(builderIdle, func() {
			bp.mu.Lock()
			defer bp.mu.Unlock()
			if bp.busy == 0 {
				bp.stopAll()
			}
		})
	}
}

// spawn launches n more helpers in the background, each joining the free
// ones once it has opened the device (bp.mu is held). When every helper
// of the pool has failed to start, a nil wakes the builds waiting for one,
// which then build in-process, and the pool builds nothing from then on.
func (bp *builderPool) spawn(d *Device, n int) {
	if bp.spawned == 0 {
		bp.gen++
		bp.free = make(chan *builder, 4*maxHelpers+1)
		bp.opening = make(chan struct{}, openingAtOnce)
	}
	gen, free, opening, start := bp.gen, bp.free, bp.opening, time.Now()
	bp.spawned += n
	for range n {
		go func() {
			opening <- struct{}{}
			b, err := spawnBuilder(d.cand.ID)
			if err == nil {
				var hello buildReply
				if err = b.dec.Decode(&hello); err == nil && (hello.Err != "" || hello.Device != d.info.Name) {
					err = errors.New("opencl: builder opened another device")
				}
				if err != nil {
					b.stop()
				}
			}
			<-opening
			bp.mu.Lock()
			defer bp.mu.Unlock()
			if gen != bp.gen {
				if err == nil {
					b.stop() // the pool stopped while it started
				}
				return
			}
			if err != nil {
				if bp.failures++; bp.failures == bp.spawned {
					bp.failed = true
					free <- nil
				}
				return
			}
			bp.all = append(bp.all, b)
			if debugOn("timing") {
				fmt.Fprintf(os.Stderr, "opencl: builder helper %d of %d ready after %.3f s\n", len(bp.all), bp.spawned, time.Since(start).Seconds())
			}
			free <- b
		}()
	}
}

// openingAtOnce bounds the helpers that open the device at the same time.
// NVIDIA's driver serialises much of opening a device across processes,
// about 0.13 s each on the H200, and helpers opening together all finish
// together (4 at once were all ready after 0.52 s, 8 after 1.0 s, 15 after
// 2.1 s); opened two at a time, the first are ready at once and take
// builds while the others open.
const openingAtOnce = 2

// prestart starts helpers for p before it is rendered, so that they open
// the device while this process renders, unless the device's binary cache
// records that p was built before (its shards are then loaded from the
// cache, and helpers opening the device would only slow the loading). It
// returns a function to call once p is loaded, ok reporting whether it
// loaded; that function ends the pool's use and records the build.
func (d *Device) prestart(p *kir.Program) func(ok bool) {
	// A rough count of the shards to come (the pool grows to the rendered
	// program's count when it builds); programs of a few kernels are
	// rendered before any helper could open the device.
	want := len(p.Kernels) / 12
	if want < 1 || poolSize() < 2 {
		return func(bool) {}
	}
	start, key := time.Now(), ""
	if d.cache.dir != "" {
		sum := d.digest(p)
		key = cacheKey("tartan-opencl-built-2", string(sum[:]), d.info.Name, d.info.DriverVersion, d.cand.Platform.Version)
		if d.cache.get(key) != nil {
			return func(bool) {}
		}
	}
	acquired := d.builders.acquire(d, want)
	if debugOn("timing") {
		fmt.Fprintf(os.Stderr, "opencl: program %q is not recorded as built: %d helpers asked for before rendering (%.3f s to check)\n",
			p.Name, want, time.Since(start).Seconds())
	}
	return func(ok bool) {
		if acquired {
			d.builders.release()
		}
		if ok && key != "" {
			d.cache.put(key, []byte("built\n")) // best effort
		}
	}
}

// serve takes helpers as they become free and gives each a shard from
// work to build with do, until work is empty, done is closed (the parent
// took the last shard) or no helper is left; do reports whether the
// helper can take more.
func (bp *builderPool) serve(work <-chan int, done <-chan struct{}, do func(b *builder, shard int) bool) {
	bp.mu.Lock()
	free := bp.free
	bp.mu.Unlock()
	if free == nil {
		return
	}
	for {
		var b *builder
		select {
		case b = <-free:
		case <-done:
			return
		}
		if b == nil {
			free <- nil // none left: leave the rest to the parent
			return
		}
		s, ok := <-work
		if !ok {
			free <- b
			return
		}
		if !do(b, s) {
			return
		}
	}
}

// run has helper b build source and puts it back among the free ones;
// ok is false when it did not build, for whatever reason (a helper that
// failed, as opposed to the source failing to build, is retired).
func (bp *builderPool) run(b *builder, source, options string) (bin []byte, ok bool) {
	bp.mu.Lock()
	free := bp.free
	bp.mu.Unlock()
	var rep buildReply
	watchdog := time.AfterFunc(builderTimeout, b.kill)
	err := b.enc.Encode(buildRequest{Source: source, Options: options})
	if err == nil {
		err = b.dec.Decode(&rep)
	}
	if !watchdog.Stop() && err == nil {
		err = errors.New("opencl: builder timed out")
	}
	if err != nil {
		b.stop()
		if free != nil {
			free <- nil // a retired helper leaves a nil in its place
		}
		return nil, false
	}
	if free != nil {
		free <- b
	}
	if rep.Err != "" {
		return nil, false
	}
	bp.built.Add(1)
	return rep.Binary, true
}

// close stops the helpers for good.
func (bp *builderPool) close() {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if bp.idle != nil {
		bp.idle.Stop()
	}
	bp.stopAll()
	bp.failed = true
}

func (bp *builderPool) stopAll() {
	for _, b := range bp.all {
		b.stop()
	}
	bp.all, bp.free, bp.spawned, bp.failures = nil, nil, 0, 0
	bp.gen++
}
