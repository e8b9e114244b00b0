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
//
// fit trains a showcase model on Fashion-MNIST: it prints the model's
// summary, a progress bar per epoch and the accuracy on the full test set.
// With --checkpoint it saves a checkpoint after every epoch and, when the
// file already exists, resumes from it. devices lists the devices a run can
// use and which is recommended. setup chooses the default device (asking, or
// with --device ID --yes), checks it and saves it in
// $XDG_CONFIG_HOME/tartan/config.json. Device selection: the --device flag,
// then the TARTAN_DEVICE environment variable, then the configured device,
// then the best available device. bench measures the host's matrix product
// against gonum in the same run, the showcase's convolutions forward and
// backward, and its whole training step, reporting medians.
//
// The exit status is 0 on success, 1 when the work fails (including a
// training run stopped by a NaN loss) and 2 for a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors that are the caller's use of the command line.
var errUsage = errors.New("usage error")

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "fit":
		err = fitCommand(args[1:], stdout, stderr)
	case "devices":
		err = devicesCommand(args[1:], stdout, stderr)
	case "setup":
		err = setupCommand(args[1:], os.Stdin, stdout, stderr)
	case "bench":
		err = benchCommand(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "tartan: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "tartan: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "tartan: %v\n", err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  tartan fit [--model fashion-cnn] [--epochs 10] [--batch-size 64] [--device ID]
             [--data DIR] [--limit N] [--seed S] [--save FILE] [--plot FILE.png]
             [--json FILE] [--checkpoint FILE]
  tartan devices [--json]
  tartan setup [--device ID --yes]
  tartan bench [--device ID] [--steps N] [--repeat R] [--json FILE]

Run "tartan fit --help" for the options of fit.
`)
}

// usageError wraps a message as a usage error.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
