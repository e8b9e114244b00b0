// Command tartan trains and runs neural networks with Tartan.
//
// Usage:
//
//	tartan fit [--model NAME|FILE] [--epochs 10] [--batch-size 64] [--device ID]
//	           [--data DIR] [--limit N] [--seed S] [--validation-split F]
//	           [--optimizer NAME] [--learning-rate LR]
//	           [--save FILE] [--plot FILE.png] [--json FILE] [--checkpoint FILE]
//	tartan evaluate MODEL [--data DIR] [--device ID] [--batch-size 64] [--json FILE]
//	tartan predict MODEL IMAGE... [--device ID] [--top 3] [--invert auto|yes|no]
//	               [--json FILE]
//	tartan summary MODEL
//	tartan run MODEL.onnx [--input [NAME=]FILE]... [--device ID] [--out DIR] [--json FILE]
//	tartan devices [--measure] [--json]
//	tartan setup [--device ID --yes]
//	tartan bench [--device ID] [--steps N] [--repeat R] [--json FILE]
//	tartan bench --suite [--fragments] [--only NAMES] [--peer FILE] [--json FILE]
//	tartan bench --onnx MODEL.onnx [--batch N] [--device ID] [--json FILE]
//
// MODEL (and a --model FILE) is a model saved by tartan fit --save: its
// architecture, weights and class names in one safetensors file. fit also
// takes an ONNX file (.onnx) as --model; evaluate, predict and summary
// refuse one with an error (status 1), run and bench --onnx run it. Every
// command takes --help, which prints its flags and exits with 0; "tartan
// help COMMAND" does the same. Flags may come before or after the
// arguments.
//
// fit trains a model on Fashion-MNIST: a showcase model (--model
// fashion-cnn, fashion-lstm, fashion-mlp or fashion-vit) from weights drawn from --seed, a saved
// model, or an ONNX model, fine-tuned from its initializers. An ONNX model
// must have one input that takes the images, [N, 28, 28, 1] (channels
// last), [N, 1, 28, 28] (channels first) or [N, 784] (flattened), with the
// batch dimension N open, and one output of [N, 10]: probabilities when
// its last node (past Identity, Reshape, Flatten, Squeeze and Unsqueeze)
// is Softmax, logits otherwise, trained with the sparse categorical
// cross-entropy of probabilities or from logits accordingly; --save then
// writes it back as ONNX, its graph as read with the fine-tuned weights,
// and must name a .onnx file. Every model trains with the optimizer of
// --optimizer (by default adam) and --learning-rate (by default the
// optimizer's Keras default: 0.001 for adam and rmsprop, 0.01 for sgd). It prints the model's summary,
// a progress bar per epoch and the accuracy on the full test set. With
// --validation-split F it holds out the last fraction F of the training
// samples and reports val_loss and val_accuracy after every epoch, in the
// progress output, the --json history and the --plot. --plot draws the
// loss and accuracy curves and marks the test accuracy; --save keeps the
// class names of the data with an nn model.
//
// Before the first step it checks everything it will write: each output
// path (--save, --json, --plot, --checkpoint) must name a regular file or
// a new one in a writable directory (a symbolic link to such a file is
// fine), and no two may name the same file; the training and test sets
// must be non-empty. With --checkpoint it saves a checkpoint after every
// epoch and, when the file already exists, resumes from it; a resumed run
// keeps the checkpoint's seed and optimizer, so a --seed or --optimizer
// that differs from it is refused (the same one, as when a command is
// simply run again, is fine), and its learning rate unless
// --learning-rate gives another.
//
// evaluate prints a saved model's loss and accuracy on the Fashion-MNIST
// test set, read from where fit reads it. predict classifies PNG, JPEG and
// GIF images: each is made grey (transparent pixels count as black),
// inverted when more than half of its border is light (--invert auto;
// Fashion-MNIST shows light garments on black, a photo is usually a dark
// object on a light background), scaled to fit the model's input keeping
// its proportions (the margin takes the border's mean shade; an image of
// the input's size is used as it is) and scaled to [0, 1] as the training
// data is; the K most probable classes (--top, 3) are printed with their
// names, and the probabilities are the model's outputs, or their softmax
// for a model that ends in logits. summary prints a saved model's layers,
// parameters and class names.
//
// run runs an ONNX model once: each --input binds a graph input to a
// TensorProto (.pb) or NumPy (.npy) file, by name (NAME=FILE) or, unnamed,
// in the order of the graph's inputs; it prints the inputs and outputs, the
// device and the compile and run times, and with --out DIR writes each
// output to DIR/NAME.npy. bench --onnx measures an ONNX model's inference
// latency and throughput on random inputs at --batch N (its open leading
// dimension).
//
// devices lists the devices a run can use, which one a run uses and why;
// --measure first times a small training step on each device and caches
// the figures in $XDG_CACHE_HOME/tartan/measurements.json, by which the
// backends of the same hardware (OpenCL and Vulkan on one GPU, the CPU
// backend, PoCL and lavapipe on the host's CPU) are then ranked. setup
// measures the devices of shared hardware that have no cached figure,
// chooses the default device (asking, or with --device ID --yes), checks it
// and saves it in $XDG_CONFIG_HOME/tartan/config.json; only a yes saves:
// "no", or input that ends before an answer (such as setup run with
// </dev/null), saves nothing. Device selection: the --device flag, then the
// TARTAN_DEVICE environment variable, then the configured device, then the
// best available device. bench measures the host's matrix product against
// gonum in the same run, the showcase's convolutions forward and backward,
// and its whole training step, reporting medians.
//
// Exit status:
//
//	0   success
//	1   the work failed (bad data, a damaged checkpoint, a model or image
//	    file that cannot be read, an ONNX model, an unusable device, a file
//	    that cannot be written, ...)
//	2   usage error: an unknown command or flag, a bad flag value, a missing
//	    or extra argument, output paths that collide or that name something
//	    other than a regular file
//	3   fit: training stopped early on a NaN or infinite value (the run
//	    still writes its outputs; the checkpoint keeps the last good epoch)
//	4   setup: nothing was saved, because the answer was no or the input
//	    ended before an answer
//	70  internal error: a bug in tartan; the message and the stack trace go
//	    to stderr
//
// tune runs bench --suite or bench --onnx (with their flags) with the
// measuring tuner on: each program's matrix-product kernels that the
// tuning cache ($XDG_CACHE_HOME/tartan/tune.json, or $TARTAN_TUNE_CACHE)
// does not hold for the device are timed under a beam (--beam N, 4) of
// candidate tilings, and the fastest is cached; bench then measures with
// them, and every later run on that device applies them. TARTAN_TUNE=N
// makes any command tune this way as it compiles.
//
// With TARTAN_CPUPROFILE=FILE in the environment, any command writes a Go
// CPU profile of its host work to FILE (read it with go tool pprof).
//
// A fatal error of the Go runtime itself (such as running out of memory)
// cannot be caught and exits with 2 after printing "fatal error:"; like 70
// it is always a bug or an exhausted machine, never a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/tartanml/tartan/device"
)

// The exit statuses of tartan (see the package documentation).
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitStopped  = 3
	exitNotSaved = 4
	exitInternal = 70
)

func main() {
	if path := os.Getenv("TARTAN_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tartan: TARTAN_CPUPROFILE: %v\n", err)
			os.Exit(exitUsage)
		}
		code := run(os.Args[1:], os.Stdout, os.Stderr)
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors that are the caller's use of the command line.
var errUsage = errors.New("usage error")

// errStopped marks a training run that stopped early (a NaN loss).
var errStopped = errors.New("training stopped early")

// command runs one verb with its arguments.
type command func(args []string, stdin io.Reader, stdout, stderr io.Writer) error

// commands are the verbs of tartan.
var commands = map[string]command{
	"fit": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return fitCommand(args, stdout, stderr)
	},
	"evaluate": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return evaluateCommand(args, stdout, stderr)
	},
	"predict": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return predictCommand(args, stdout, stderr)
	},
	"summary": func(args []string, _ io.Reader, stdout, _ io.Writer) error {
		return summaryCommand(args, stdout)
	},
	"run": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runCommand(args, stdout, stderr)
	},
	"devices": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return devicesCommand(args, stdout, stderr)
	},
	"setup": setupCommand,
	"bench": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return benchCommand(args, stdout, stderr)
	},
	"tune": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return tuneCommand(args, stdout, stderr)
	},
}

// run executes one command line, reading answers from the standard input,
// and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runWith(args, os.Stdin, stdout, stderr)
}

// runWith is run with the input given. A panic in the command is caught
// and reported as an internal error with its stack.
func runWith(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	out := &lineWriter{w: stdout}
	defer func() {
		if r := recover(); r != nil {
			out.endLine()
			fmt.Fprintf(stderr, "tartan: internal error: %v\n\nThis is a bug in tartan; please report it with the command line and this trace:\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			if _, ok := commands[args[1]]; ok {
				// tartan help fit is tartan fit --help.
				return runWith([]string{args[1], "--help"}, stdin, stdout, stderr)
			}
			fmt.Fprintf(stderr, "tartan: help: unknown command %q\n", args[1])
			usage(stderr)
			return exitUsage
		}
		usage(stdout)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tartan: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	err := cmd(args[1:], stdin, out, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	}
	// The error starts a line of its own, also when the standard output
	// and error are one terminal or file and a line is unfinished.
	out.endLine()
	fmt.Fprintf(stderr, "tartan: %v\n", err)
	return exitCode(err)
}

// exitCode is the exit status for a command's error.
func exitCode(err error) int {
	switch {
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errStopped):
		return exitStopped
	case errors.Is(err, device.ErrNotSaved):
		return exitNotSaved
	}
	return exitError
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  tartan fit [--model NAME|FILE] [--epochs 10] [--batch-size 64] [--device ID]
             [--data DIR] [--limit N] [--seed S] [--validation-split F]
             [--optimizer NAME] [--learning-rate LR]
             [--save FILE] [--plot FILE.png] [--json FILE] [--checkpoint FILE]
  tartan evaluate MODEL [--data DIR] [--device ID] [--batch-size 64] [--json FILE]
  tartan predict MODEL IMAGE... [--device ID] [--top 3] [--invert auto|yes|no]
                 [--json FILE]
  tartan summary MODEL
  tartan run MODEL.onnx [--input [NAME=]FILE]... [--device ID] [--out DIR]
             [--json FILE]
  tartan devices [--measure] [--json]
  tartan setup [--device ID --yes]
  tartan bench [--device ID] [--steps N] [--repeat R] [--json FILE]
  tartan bench --suite [--fragments] [--only NAMES] [--peer FILE] [--json FILE]
  tartan bench --onnx MODEL.onnx [--batch N] [--device ID] [--json FILE]
  tartan tune [--beam N] --suite|--onnx MODEL.onnx [bench flags]

fit trains a model on Fashion-MNIST (NAME: fashion-cnn, fashion-lstm,
fashion-mlp, fashion-vit); MODEL and FILE are models saved by tartan fit --save.
Run "tartan COMMAND --help" for the flags of a command.

Exit status: 0 success, 1 error, 2 usage error, 3 training stopped by a NaN,
4 setup saved nothing (the answer was no, or the input ended), 70 internal
error (a bug: please report it).
`)
}

// usageError wraps a message as a usage error.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// lineWriter passes writes on and remembers whether the last one left a
// line unfinished, so that an error message can start on a line of its own.
type lineWriter struct {
	w    io.Writer
	open bool // the last byte written was not a newline
}

// Write implements io.Writer.
func (l *lineWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.open = p[n-1] != '\n'
	}
	return n, err
}

// endLine ends an unfinished line.
func (l *lineWriter) endLine() {
	if l.open {
		l.Write([]byte("\n"))
	}
}

// progressWriter is where a command sends nn's progress output: the file
// behind w when w is a lineWriter on one, so that nn can tell a terminal
// (where it redraws its bar in place) from a file or pipe.
func progressWriter(w io.Writer) io.Writer {
	if l, ok := w.(*lineWriter); ok {
		if _, isFile := l.w.(*os.File); isFile {
			return l.w
		}
	}
	return w
}
