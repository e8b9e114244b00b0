package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
)

// scriptedStep is a Step whose runs take given times and return given
// losses, to check the time-boxing of runSteps exactly.
type scriptedStep struct {
	runs    int
	sleep   time.Duration // every run
	compile time.Duration // extra time of the first run, reported as compiling
	loss    func(run int) float64
}

func (s *scriptedStep) Run() (float64, error) {
	s.runs++
	if s.runs == 1 {
		time.Sleep(s.compile)
	}
	time.Sleep(s.sleep)
	if s.loss != nil {
		return s.loss(s.runs), nil
	}
	return 1 / float64(s.runs), nil
}
func (s *scriptedStep) Params() int  { return 1 }
func (s *scriptedStep) Kernels() int { return 1 }
func (s *scriptedStep) CompileSeconds() float64 {
	if s.runs == 0 {
		return 0
	}
	return s.compile.Seconds()
}
func (s *scriptedStep) Close() error { return nil }

type scriptedPrepared struct{ s *scriptedStep }

func (p scriptedPrepared) params() int                          { return 1 }
func (p scriptedPrepared) compile(backend.Device) (Step, error) { return p.s, nil }

func TestRunStepsBounds(t *testing.T) {
	// Fast steps: the step bound ends the timing.
	s := &scriptedStep{}
	times, losses, err := runSteps(s, Options{Warmup: 2, MaxSteps: 3, MaxSeconds: 100})
	if err != nil || len(times) != 3 || len(losses) != 5 || s.runs != 5 {
		t.Errorf("fast steps: %d timed, %d losses, %d runs, %v; want 3, 5, 5", len(times), len(losses), s.runs, err)
	}
	// Slow steps: one warm-up step and one timed step, whatever the
	// bounds on their numbers.
	s = &scriptedStep{sleep: 30 * time.Millisecond}
	times, _, err = runSteps(s, Options{Warmup: 5, MaxSteps: 100, MaxSeconds: 0.01})
	if err != nil || len(times) != 1 || s.runs != 2 {
		t.Errorf("slow steps: %d timed in %d runs, %v; want 1 in 2", len(times), s.runs, err)
	}
	if len(times) == 1 && times[0] < 0.03 {
		t.Errorf("a 30 ms step timed at %v s", times[0])
	}
	// Compiling in the first step does not count against the warm-up's
	// time: all three warm-up steps run.
	s = &scriptedStep{sleep: time.Millisecond, compile: 300 * time.Millisecond}
	_, _, err = runSteps(s, Options{Warmup: 3, MaxSteps: 1, MaxSeconds: 0.2})
	if err != nil || s.runs != 4 {
		t.Errorf("compiling first step: %d runs, %v; want 3 warm-up and 1 timed", s.runs, err)
	}
}

func TestMeasureReportsBadLoss(t *testing.T) {
	s := &scriptedStep{loss: func(run int) float64 {
		if run == 3 {
			return math.NaN()
		}
		return 1
	}}
	e := Entry{Name: "scripted", Batch: 4, build: func(Config) (prepared, error) { return scriptedPrepared{s}, nil }}
	dev := cpu.New()
	defer dev.Close()
	r := Measure(dev, e, Options{Warmup: 1, MaxSteps: 10, MaxSeconds: 100})
	if r.OK() || !strings.Contains(r.Error, "step 3") || !strings.Contains(r.Error, "NaN") {
		t.Errorf("NaN loss at step 3: %+v", r)
	}
	s = &scriptedStep{}
	r = Measure(dev, e, Options{Warmup: 1, MaxSteps: 4, MaxSeconds: 100, Config: Config{Batch: 3}})
	if !r.OK() || r.Steps != 4 || r.Batch != 3 || r.Kind != "model" || r.Params != 1 || r.FirstLoss != 1 || r.LastLoss != 0.2 {
		t.Errorf("good run: %+v", r)
	}
}

// TestMeasureEntry measures a real entry at its tiny size.
func TestMeasureEntry(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dev := cpu.New()
	defer dev.Close()
	es, err := Select([]string{"resnet20"}, false)
	if err != nil {
		t.Fatal(err)
	}
	r := Measure(dev, es[0], Options{Warmup: 1, MaxSteps: 2, MaxSeconds: 100, Config: Config{Batch: 2, Tiny: true}})
	if !r.OK() || r.Steps != 2 || r.Kernels < 10 || r.CompileSeconds <= 0 || r.Batch != 2 || !(r.MSPerStep > 0) {
		t.Errorf("%+v", r)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
