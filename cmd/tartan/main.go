// Command tartan trains and runs neural networks with Tartan.
//
// Usage:
//
//	tartan fit [--model fashion-cnn] [--epochs 10] [--batch-size 64] [--device ID]
//	           [--data DIR] [--limit N] [--seed S] [--save FILE] [--plot FILE.png]
//	           [--json FILE] [--checkpoint FILE]
//	tartan devices [--json]
//	tartan setup [--device ID --yes]
//	tartan bench [--device ID] [--steps N] [--repeat R] [--json FILE]
//	tartan bench --suite [--fragments] [--only NAMES] [--peer FILE] [--json FILE]
//
// fit trains a showcase model on Fashion-MNIST: it prints the model's
// summary, a progress bar per epoch and the accuracy on the full test set.
// Before the first step it checks everything it will write: each output
// path (--save, --json, --plot, --checkpoint) must name a regular file or
// a new one in a writable directory (a symbolic link to such a file is
// fine), and no two may name the same file; the training and test sets
// must be non-empty. With --checkpoint it saves a checkpoint after every
// epoch and, when the file already exists, resumes from it; a resumed run
// keeps the checkpoint's seed, so a --seed that differs from it is refused
// (the same --seed, as when a command is simply run again, is fine).
//
// devices lists the devices a run can use and which is recommended. setup
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
//	1   the work failed (bad data, a damaged checkpoint, an unusable device,
//	    a file that cannot be written, ...)
//	2   usage error: an unknown command or flag, a bad flag value, output
//	    paths that collide or that name something other than a regular file
//	3   fit: training stopped early on a NaN or infinite value (the run
//	    still writes its outputs; the checkpoint keeps the last good epoch)
//	4   setup: nothing was saved, because the answer was no or the input
//	    ended before an answer
//	70  internal error: a bug in tartan; the message and the stack trace go
//	    to stderr
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
	"devices": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return devicesCommand(args, stdout, stderr)
	},
	"setup": setupCommand,
	"bench": func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return benchCommand(args, stdout, stderr)
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
	defer func() {
		if r := recover(); r != nil {
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
		usage(stdout)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tartan: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	err := cmd(args[1:], stdin, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	}
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
  tartan fit [--model fashion-cnn] [--epochs 10] [--batch-size 64] [--device ID]
             [--data DIR] [--limit N] [--seed S] [--save FILE] [--plot FILE.png]
             [--json FILE] [--checkpoint FILE]
  tartan devices [--json]
  tartan setup [--device ID --yes]
  tartan bench [--device ID] [--steps N] [--repeat R] [--json FILE]
  tartan bench --suite [--fragments] [--only NAMES] [--peer FILE] [--json FILE]

Run "tartan fit --help" for the options of fit.

Exit status: 0 success, 1 error, 2 usage error, 3 training stopped by a NaN,
4 setup saved nothing (the answer was no, or the input ended), 70 internal
error (a bug: please report it).
`)
}

// usageError wraps a message as a usage error.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
