package main

import (
	"fmt"
	"io"
	"strings"
)

const summaryAbout = `Prints the summary of MODEL, a model saved by tartan fit --save: its layers,
their output shapes and parameters, and the names of its classes.`

// summaryCommand runs tartan summary.
func summaryCommand(args []string, stdout io.Writer) error {
	f := newVerbFlags("summary", "summary MODEL", summaryAbout, exitHelp)
	rest, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		return usageError("summary needs MODEL, the file of a model saved by tartan fit --save")
	case len(rest) > 1:
		return usageError("summary takes one MODEL, got %q", rest)
	}
	m, err := loadModelFile("model", rest[0])
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, m.Summary())
	if names := m.Labels(); names != nil {
		numbered := make([]string, len(names))
		for i, n := range names {
			numbered[i] = fmt.Sprintf("%d %s", i, n)
		}
		fmt.Fprintf(stdout, " Classes: %s\n", strings.Join(numbered, ", "))
	}
	return nil
}
