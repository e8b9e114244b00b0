package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The help texts of the flags that several commands share, so that each
// reads the same everywhere.
const (
	deviceHelp = "run on the device `ID`: " + knownDeviceForms + ";\ndefault: $TARTAN_DEVICE, then the configured device, then the best available"
	dataHelp   = "read the Fashion-MNIST files from the directory `DIR`\n(default: $TARTAN_DATA, the Keras cache, the system's copy)"
	batchHelp  = "`N` samples per step"
	jsonHelp   = "write the results as JSON to `FILE`"
)

// exitHelp is the exit status paragraph of the commands' help.
const exitHelp = "Exit status: 0 success, 1 error, 2 usage error, 70 internal error."

// verbFlags is the flag set of one command with its help.
type verbFlags struct {
	*flag.FlagSet
	verb     string
	synopsis string // the usage line after "tartan "
	about    string // what the command does, after the usage line
	footer   string // after the flags
}

// newVerbFlags returns the flag set of tartan verb. Its help goes to
// standard output on --help; a parse error is returned, not printed.
func newVerbFlags(verb, synopsis, about, footer string) *verbFlags {
	fs := flag.NewFlagSet("tartan "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &verbFlags{FlagSet: fs, verb: verb, synopsis: synopsis, about: about, footer: footer}
}

// deviceFlag, dataFlag, batchFlag and jsonFlag define the shared flags.
func (f *verbFlags) deviceFlag(p *string) { f.StringVar(p, "device", "", deviceHelp) }
func (f *verbFlags) dataFlag(p *string)   { f.StringVar(p, "data", "", dataHelp) }
func (f *verbFlags) batchFlag(p *int, def int, what string) {
	f.IntVar(p, "batch-size", def, batchHelp+" of "+what)
}
func (f *verbFlags) jsonFlag(p *string) { f.StringVar(p, "json", "", jsonHelp) }

// printHelp writes the command's help: the usage line, what it does, each
// flag with two dashes, and the footer.
func (f *verbFlags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: tartan %s\n\n%s\n", f.synopsis, f.about)
	n := 0
	f.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
	}
	f.VisitAll(func(fl *flag.Flag) {
		kind, usage := flag.UnquoteUsage(fl)
		line := "  --" + fl.Name
		if kind != "" {
			line += " " + kind
		}
		usage = strings.ReplaceAll(usage, "\n", "\n        ")
		if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" {
			usage += fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		fmt.Fprintf(w, "%s\n        %s\n", line, usage)
	})
	if f.footer != "" {
		fmt.Fprintf(w, "\n%s\n", f.footer)
	}
}

// parse parses args, in which flags may come before, between and after
// the arguments ("--" ends the flags), and returns the arguments. --help
// prints the help to stdout and returns flag.ErrHelp; a bad flag is a
// usage error that names it.
func (f *verbFlags) parse(args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.printHelp(stdout)
			return nil, err
		}
		if err != nil {
			return nil, usageError("%v (see tartan %s --help)", err, f.verb)
		}
		rest := f.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// given reports whether the flag name was set on the command line.
func (f *verbFlags) given(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}
