package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/tartanml/tartan/tune"
)

// tuneCommand implements "tartan tune [--beam N] BENCH-FLAGS": it runs
// tartan bench (--suite or --onnx, with their flags) with $TARTAN_TUNE set,
// so that every program the benchmark compiles is first searched by the
// measuring tuner for the kernels the tuning cache does not hold for the
// device; the decisions are cached and the benchmark then measures with
// them. Every later run on the device applies them.
func tuneCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	beam := fs.Int("beam", 4, "tilings kept after each round of the search (1 to 64)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tartan tune [--beam N] --suite [--only NAMES] [--device ID] [bench flags]\n"+
			"       tartan tune [--beam N] --onnx MODEL.onnx [--batch N] [--device ID] [bench flags]\n\n"+
			"Searches the matrix-product tilings of the benchmark's programs on the device,\n"+
			"caches the fastest (%s, or $%s) and then benchmarks with them.\n\n", cachePathForHelp(), tune.EnvCache)
		fs.PrintDefaults()
	}
	// The --beam flag is ours; every other flag goes to bench.
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--beam" || a == "-beam":
			if i+1 >= len(args) {
				return usageError("--beam needs a value")
			}
			if err := fs.Parse(args[i : i+2]); err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			i++
		case len(a) > 7 && (a[:7] == "--beam=" || a[:6] == "-beam="):
			if err := fs.Parse([]string{a}); err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
		case a == "--help" || a == "-help" || a == "-h":
			fs.Usage()
			return flag.ErrHelp
		default:
			rest = append(rest, a)
		}
	}
	if *beam < 1 || *beam > 64 {
		return usageError("--beam takes 1 to 64")
	}
	suite, onnx := false, false
	for _, a := range rest {
		suite = suite || a == "--suite" || a == "-suite"
		onnx = onnx || a == "--onnx" || a == "-onnx" || len(a) > 7 && a[:7] == "--onnx="
	}
	if !suite && !onnx {
		return usageError("tune runs a benchmark: give --suite or --onnx MODEL.onnx")
	}
	old, had := os.LookupEnv(tune.EnvTune)
	os.Setenv(tune.EnvTune, strconv.Itoa(*beam))
	defer func() {
		if had {
			os.Setenv(tune.EnvTune, old)
		} else {
			os.Unsetenv(tune.EnvTune)
		}
	}()
	return benchCommand(rest, stdout, stderr)
}

func cachePathForHelp() string {
	p, err := tune.DefaultPath()
	if err != nil {
		return "no cache directory: " + err.Error()
	}
	return p
}
