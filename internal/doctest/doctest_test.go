// The Go code of the documentation is checked by compiling and running it.
//
// Marking. Every ```go block of a checked Markdown file (README.md,
// docs/TUTORIAL.md) must have, as the last non-blank line before its opening
// fence, the comment
//
//	<!-- doctest: PROGRAM FILE [ARG ...] -->
//
// PROGRAM names a program (a directory holding package main) and FILE the
// file of it that the block is. Blocks naming the same program and file are
// joined in the order they appear, so one file may be shown in pieces (the
// first piece then holds the package clause and the imports). ARGs, given on
// at most one block of a program, are the command-line arguments it runs
// with. A Go block without the comment fails the test: no Go shown in the
// documentation goes unchecked. The comment is invisible on a rendered page.
//
// Running. The programs of a file are written to a temporary directory under
// testdata, inside the module, so that they build against this module with
// its go.mod and the module cache (GOPROXY=off keeps the go command offline).
// All are vetted, then run in the order of their first block:
//
//   - a program with a _test.go file is tested with `go test`: its tests are
//     what runs (main is compiled, not started);
//   - any other program is built and run with its ARGs, every such program
//     of a file in one shared working directory, so that a file one program
//     writes (a saved model) the next one can read.
//
// Each must succeed, and the checks below, keyed by program name, then
// examine its output and the files it left. Programs run with
// TARTAN_DEVICE=cpu (Tartan's own CPU backend, whatever the machine has or
// its configuration says), without TARTAN_DEBUG, and with a configuration
// directory of their own.
//
// Skipping. Without a go command both tests skip. A program that imports
// package data needs Fashion-MNIST: when no copy is installed (the loader
// reports data.ErrNotFound with downloads off), such programs are skipped
// and say why; the others still run.
package doctest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
)

// block is one marked ```go block of a Markdown file.
type block struct {
	program, file string
	args          []string
	code          string
	line          int // of the opening fence, from 1
}

// program is the files and arguments of one program, gathered from its
// blocks.
type program struct {
	name    string
	files   map[string]string
	order   []string // file names, in order of appearance
	args    []string
	argLine int // the line of the block that gave args, 0 when none did
	line    int // the line of its first block
	// starts holds, per file, the Markdown line of each of its blocks'
	// first line and the file line it became.
	starts map[string][][2]int
}

// marker matches the comment before a block.
var marker = regexp.MustCompile(`^<!--\s*doctest:\s*(.*?)\s*-->$`)

// parseBlocks returns the ```go blocks of the Markdown text md, erring on a
// block without a well-formed marker or a fence left open.
func parseBlocks(name, md string) ([]block, error) {
	var out []block
	lines := strings.Split(md, "\n")
	lastText := "" // the last non-blank line outside a block
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		if !strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			if strings.TrimSpace(l) != "" {
				lastText = strings.TrimSpace(l)
			}
			continue
		}
		lang := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "`"))
		start := i + 1
		end := -1
		for j := start; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%s:%d: the block opened here is never closed", name, start)
		}
		i = end
		if lang != "go" {
			lastText = ""
			continue
		}
		m := marker.FindStringSubmatch(lastText)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: a Go block without a <!-- doctest: PROGRAM FILE [ARG ...] --> comment on the line before it", name, start)
		}
		fields := strings.Fields(m[1])
		if len(fields) < 2 || !strings.HasSuffix(fields[1], ".go") || strings.ContainsAny(fields[0]+fields[1], `/\`) {
			return nil, fmt.Errorf("%s:%d: doctest comment %q: want PROGRAM FILE.go [ARG ...]", name, start, lastText)
		}
		out = append(out, block{
			program: fields[0], file: fields[1], args: fields[2:],
			code: strings.Join(lines[start:end], "\n") + "\n",
			line: start,
		})
		lastText = ""
	}
	return out, nil
}

// gather joins blocks into programs, in the order of their first block.
func gather(name string, blocks []block) ([]*program, error) {
	var progs []*program
	byName := map[string]*program{}
	for _, b := range blocks {
		p := byName[b.program]
		if p == nil {
			p = &program{name: b.program, files: map[string]string{}, line: b.line, starts: map[string][][2]int{}}
			byName[b.program] = p
			progs = append(progs, p)
		}
		if _, ok := p.files[b.file]; !ok {
			p.order = append(p.order, b.file)
		}
		fileLine := strings.Count(p.files[b.file], "\n") + 1
		p.starts[b.file] = append(p.starts[b.file], [2]int{b.line + 1, fileLine})
		p.files[b.file] += b.code
		if len(b.args) > 0 {
			if p.argLine != 0 {
				return nil, fmt.Errorf("%s:%d: program %s already has arguments from the block at line %d", name, b.line, b.program, p.argLine)
			}
			p.args, p.argLine = b.args, b.line
		}
	}
	return progs, nil
}

// hasTests reports whether p has a _test.go file.
func (p *program) hasTests() bool {
	for _, f := range p.order {
		if strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// imports reports whether any file of p imports path.
func (p *program) imports(path string) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range p.order {
		f, err := parser.ParseFile(fset, p.name+"/"+name, p.files[name], parser.ImportsOnly)
		if err != nil {
			return false, err
		}
		for _, im := range f.Imports {
			if v, _ := strconv.Unquote(im.Path.Value); v == path {
				return true, nil
			}
		}
	}
	return false, nil
}

// check examines what a program printed and the files it left in dir.
type check func(t *testing.T, output, dir string)

// moduleRoot returns the directory of go.mod above the working directory
// and the module's path.
func moduleRoot(t *testing.T) (root, path string) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
					return dir, f[1]
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// fashionMissing returns why Fashion-MNIST cannot be loaded without a
// download, or "" when it can.
func fashionMissing(t *testing.T) string {
	_, _, err := data.FashionMNIST(data.Download(false))
	switch {
	case err == nil:
		return ""
	case errors.Is(err, data.ErrNotFound):
		first, _, _ := strings.Cut(err.Error(), "\n")
		return "needs Fashion-MNIST (apt-get install dataset-fashion-mnist, or set TARTAN_DATA): " + first
	}
	t.Fatalf("Fashion-MNIST cannot be loaded: %v", err)
	return ""
}

// runDoc compiles and runs every Go block of the Markdown file at mdPath
// (relative to the module root), then applies the checks.
func runDoc(t *testing.T, mdPath string, checks map[string]check) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on $PATH: the documentation's programs cannot be built")
	}
	root, modPath := moduleRoot(t)
	md, err := os.ReadFile(filepath.Join(root, mdPath))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(mdPath, string(md))
	if err != nil {
		t.Fatal(err)
	}
	progs, err := gather(mdPath, blocks)
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) == 0 {
		t.Fatalf("%s has no Go blocks", mdPath)
	}
	for name := range checks {
		if !slices.ContainsFunc(progs, func(p *program) bool { return p.name == name }) {
			t.Errorf("the test checks a program %q that %s does not have", name, mdPath)
		}
	}

	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.MkdirTemp("testdata", "run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(src) })
	src, err = filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, src)
	if err != nil {
		t.Fatal(err)
	}
	pkgOf := func(p *program) string { return "./" + filepath.ToSlash(filepath.Join(rel, p.name)) }
	for _, p := range progs {
		dir := filepath.Join(src, p.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range p.order {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(p.files[f]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	work, bin, config := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"TARTAN_DEVICE=cpu", "GOPROXY=off", "XDG_CONFIG_HOME=" + config}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "TARTAN_DEVICE" && k != "TARTAN_DEBUG" && k != "GOPROXY" && k != "XDG_CONFIG_HOME" {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(dir, name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// Vet everything, build the programs that run as commands.
	var all, commands []string
	for _, p := range progs {
		all = append(all, pkgOf(p))
		if !p.hasTests() {
			commands = append(commands, pkgOf(p))
		}
	}
	if out, err := run(root, goCmd, append([]string{"vet"}, all...)...); err != nil {
		t.Fatalf("go vet of %s's programs: %v\n%s", mdPath, err, relabel(out, rel, progs, mdPath))
	}
	if len(commands) > 0 {
		if out, err := run(root, goCmd, append([]string{"build", "-o", bin + string(filepath.Separator)}, commands...)...); err != nil {
			t.Fatalf("go build of %s's programs: %v\n%s", mdPath, err, relabel(out, rel, progs, mdPath))
		}
	}

	missing := "unchecked"
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			needsData, err := p.imports(modPath + "/data")
			if err != nil {
				t.Fatal(err)
			}
			if needsData {
				if missing == "unchecked" {
					missing = fashionMissing(t)
				}
				if missing != "" {
					t.Skipf("%s (program %s, %s:%d)", missing, p.name, mdPath, p.line)
				}
			}
			var out string
			start := time.Now()
			if p.hasTests() {
				out, err = run(root, goCmd, "test", "-count=1", pkgOf(p))
			} else {
				out, err = run(work, filepath.Join(bin, p.name), p.args...)
			}
			if err != nil {
				t.Fatalf("program %s (%s:%d) %v: %v\n%s", p.name, mdPath, p.line, p.args, err, out)
			}
			t.Logf("program %s ran in %v", p.name, time.Since(start).Round(time.Millisecond))
			if c := checks[p.name]; c != nil {
				c(t, out, work)
			}
		})
	}
}

// relabel rewrites the positions in the go command's messages, such as
// testdata/run-1/train/main.go:12:3, as positions in the Markdown file, so
// that an error points at the documentation.
func relabel(out, rel string, progs []*program, mdPath string) string {
	re := regexp.MustCompile(`\S*` + regexp.QuoteMeta(filepath.ToSlash(rel)) + `/([^/\s]+)/([^/\s:]+\.go):([0-9]+)(:[0-9]+)?`)
	return re.ReplaceAllStringFunc(out, func(pos string) string {
		m := re.FindStringSubmatch(pos)
		n, _ := strconv.Atoi(m[3])
		for _, p := range progs {
			if p.name != m[1] {
				continue
			}
			md := 0
			for _, st := range p.starts[m[2]] {
				if st[1] <= n {
					md = st[0] + n - st[1]
				}
			}
			if md > 0 {
				return fmt.Sprintf("%s:%d%s (program %s, %s:%d%s)", mdPath, md, m[4], m[1], m[2], n, m[4])
			}
		}
		return pos
	})
}

// mustMatch fails t unless output has a line matching each pattern and
// returns the submatches of the first pattern's line.
func mustMatch(t *testing.T, output string, patterns ...string) []string {
	t.Helper()
	var first []string
	for i, p := range patterns {
		re := regexp.MustCompile(`(?m)^` + p + `$`)
		m := re.FindStringSubmatch(output)
		if m == nil {
			t.Errorf("no output line matches %q; the output was:\n%s", p, output)
			continue
		}
		if i == 0 {
			first = m
		}
	}
	return first
}

// accuracyAbove fails t unless s, a printed accuracy, exceeds min: trained
// even briefly, the model must beat chance (0.1 for ten classes).
func accuracyAbove(t *testing.T, s string, min float64) {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= min || v > 1 {
		t.Errorf("test accuracy %q, want a number in (%g, 1]", s, min)
	}
}

func TestTutorial(t *testing.T) {
	runDoc(t, "docs/TUTORIAL.md", map[string]check{
		"train": func(t *testing.T, out, dir string) {
			if m := mustMatch(t, out,
				`test loss [0-9.]+, test accuracy ([0-9.]+)`,
				`training on 512 images of \[28 28 1\], testing on 512`,
				`saved fashion.safetensors`); m != nil {
				accuracyAbove(t, m[1], 0.2)
			}
			m, err := nn.Load(filepath.Join(dir, "fashion.safetensors"))
			if err != nil {
				t.Fatalf("the saved model: %v", err)
			}
			if in, o := m.InputShape(), m.OutputShape(); !slices.Equal(in, []int{28, 28, 1}) || !slices.Equal(o, []int{10}) {
				t.Errorf("the saved model maps %v to %v, want [28 28 1] to [10]", in, o)
			}
			csv, err := os.ReadFile(filepath.Join(dir, "history.csv"))
			if err != nil {
				t.Fatal(err)
			}
			want := "epoch,accuracy,loss,val_accuracy,val_loss"
			if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(lines) != 2 || lines[0] != want {
				t.Errorf("history.csv is\n%s\nwant the header %q and one row (one epoch)", csv, want)
			}
		},
		"predict": func(t *testing.T, out, _ string) {
			n := 0
			line := regexp.MustCompile(`^image [0-9]: predicted .+ \((0|1)\.[0-9]{2}\), labelled .+$`)
			for s := bufio.NewScanner(strings.NewReader(out)); s.Scan(); {
				if !line.MatchString(s.Text()) {
					t.Errorf("unexpected line %q", s.Text())
				}
				n++
			}
			if n != 5 {
				t.Errorf("%d lines, want one per image (5):\n%s", n, out)
			}
		},
		"customlayer": func(t *testing.T, out, _ string) {
			// The RBF layer holds 4 centres of 2 coordinates: 8 parameters.
			if !strings.Contains(out, "rbf (RBF)") || !regexp.MustCompile(`rbf \(RBF\)\s+│ \(None, 4\)\s+│\s+8 │`).MatchString(out) {
				t.Errorf("the summary lacks the RBF layer's row of 8 parameters:\n%s", out)
			}
			if m := mustMatch(t, out, `accuracy: ([0-9.]+)`); m != nil {
				accuracyAbove(t, m[1], 0.99)
			}
		},
		"customop": func(t *testing.T, out, _ string) {
			// By hand: the points (0,0) and (1,1) are both at squared
			// distance 1 from (1,0), and d/dx of Σ|x−c|² is 2(x−c).
			want := "gradient check passed\nd  = [1 1]\ndx = [-2 0 0 2]\n"
			if out != want {
				t.Errorf("output\n%s\nwant\n%s", out, want)
			}
		},
	})
}

func TestREADME(t *testing.T) {
	runDoc(t, "README.md", map[string]check{
		"readme": func(t *testing.T, out, _ string) {
			if m := mustMatch(t, out, `test accuracy: ([0-9.]+)`); m != nil {
				accuracyAbove(t, m[1], 0.5)
			}
		},
	})
}

// TestRelabel maps positions in the written files back to the document.
func TestRelabel(t *testing.T) {
	doc := "<!-- doctest: a main.go -->\n```go\npackage main\n```\n\ntext\n\n" +
		"<!-- doctest: a main.go -->\n```go\nfunc main() {\n\tundefined()\n}\n```\n"
	blocks, err := parseBlocks("doc.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := gather("doc.md", blocks)
	if err != nil {
		t.Fatal(err)
	}
	// main.go is "package main\nfunc main() {\n\tundefined()\n}\n": its
	// line 3 is the document's line 11.
	got := relabel("vet: testdata/run-1/a/main.go:3:2: undefined: undefined", "testdata/run-1", progs, "doc.md")
	want := "vet: doc.md:11:2 (program a, main.go:3:2): undefined: undefined"
	if got != want {
		t.Errorf("relabel gave\n%s\nwant\n%s", got, want)
	}
}

// TestParseBlocks checks the marking rules on small documents.
func TestParseBlocks(t *testing.T) {
	doc := "# Title\n\n<!-- doctest: a main.go -n 3 -->\n\n```go\npackage main\n```\n\n" +
		"```sh\ngo run .\n```\n\n<!-- doctest: a main.go -->\n```go\nfunc f() {}\n```\n" +
		"<!-- doctest: b b_test.go -->\n```go\npackage main\n```\n"
	blocks, err := parseBlocks("doc.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := gather("doc.md", blocks)
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 2 || progs[0].name != "a" || progs[1].name != "b" {
		t.Fatalf("programs %+v, want a then b", progs)
	}
	a, b := progs[0], progs[1]
	if got := a.files["main.go"]; got != "package main\nfunc f() {}\n" {
		t.Errorf("a's main.go is %q, want the two blocks joined", got)
	}
	if !slices.Equal(a.args, []string{"-n", "3"}) || a.line != 5 || a.hasTests() || !b.hasTests() {
		t.Errorf("a: args %v line %d tests %v; b tests %v", a.args, a.line, a.hasTests(), b.hasTests())
	}

	for _, c := range []struct{ doc, err string }{
		{"```go\npackage main\n```\n", "doc.md:1: a Go block without"},
		{"<!-- doctest: a -->\n```go\npackage main\n```\n", "want PROGRAM FILE.go"},
		{"<!-- doctest: a main.go -->\ntext\n```go\npackage main\n```\n", "doc.md:3: a Go block without"},
		{"<!-- doctest: a main.go -->\n```go\npackage main\n", "never closed"},
		{"<!-- doctest: a main.go -->\n```sh\nls\n```\n```go\npackage main\n```\n", "doc.md:5: a Go block without"},
	} {
		_, err := parseBlocks("doc.md", c.doc)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("document %q: error %v, want one containing %q", c.doc, err, c.err)
		}
	}
	blocks, _ = parseBlocks("doc.md", "<!-- doctest: a x.go -n 1 -->\n```go\n```\n<!-- doctest: a y.go -n 2 -->\n```go\n```\n")
	if _, err := gather("doc.md", blocks); err == nil || !strings.Contains(err.Error(), "already has arguments") {
		t.Errorf("two argument lists: error %v", err)
	}
}
