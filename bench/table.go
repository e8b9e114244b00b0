package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
)

// WriteTable prints a report's entries, one row each.
func WriteTable(w io.Writer, rep Report) {
	fmt.Fprintf(w, "%s %s on %s (%s), %d threads, %s\n", rep.Tool, rep.Version, rep.Device, rep.DeviceName, rep.Threads, rep.Precision)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "entry\tkind\tbatch\tparams\tms/step\tsteps\tcompile s\tkernels\tloss first\tloss last\t")
	for _, r := range rep.Entries {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t\t\t\t\t\t\t  error: %s\n", r.Name, r.Kind, r.Batch, params(r.Params), oneLine(r.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%d\t%.2f\t%s\t%.4g\t%.4g\t\n", r.Name, r.Kind, r.Batch, params(r.Params),
			r.MSPerStep, r.Steps, r.CompileSeconds, count(r.Kernels), r.FirstLoss, r.LastLoss)
	}
	tw.Flush()
}

// params prints a parameter count with thousands separators, or "-".
func params(n int) string {
	if n <= 0 {
		return "-"
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// oneLine keeps the first line of an error message.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// ReadReport reads a report written by tartan bench --suite --json or by
// torch_suite.py --json.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, err
	}
	return ParseReport(b, path)
}

// ParseReport decodes a report; name (a file name) prefixes its errors. It
// needs a tool and at least one entry, every entry a name, and no negative
// times or counts.
func ParseReport(b []byte, name string) (Report, error) {
	var rep Report
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("%s: not a suite report: %w", name, err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("%s: not a suite report: more data after the report", name)
	}
	if rep.Tool == "" || len(rep.Entries) == 0 {
		return Report{}, fmt.Errorf("%s: not a suite report: no tool or no entries", name)
	}
	for i, r := range rep.Entries {
		if r.Name == "" {
			return Report{}, fmt.Errorf("%s: entry %d has no name", name, i)
		}
		if r.MSPerStep < 0 || r.CompileSeconds < 0 || r.Steps < 0 || r.Batch < 0 || r.Params < 0 {
			return Report{}, fmt.Errorf("%s: entry %s has a negative figure (ms_per_step %v, compile_seconds %v, steps %d, batch %d, params %d)",
				name, r.Name, r.MSPerStep, r.CompileSeconds, r.Steps, r.Batch, r.Params)
		}
	}
	return rep, nil
}

// ReadReports reads several reports of one tool, such as the rounds of
// run_suite.sh, and combines them with MedianReport.
func ReadReports(paths []string) (Report, error) {
	var reps []Report
	for _, p := range paths {
		r, err := ReadReport(p)
		if err != nil {
			return Report{}, err
		}
		reps = append(reps, r)
	}
	return MedianReport(reps)
}

// MedianReport combines reports of the same tool and device (rounds of one
// run): each entry's ms/step is the median over the rounds that measured
// it, its steps the total, its other fields the first such round's; an
// entry no round measured keeps the first round's error. The entries
// follow the first report's order, then any the others add.
func MedianReport(reps []Report) (Report, error) {
	if len(reps) == 0 {
		return Report{}, fmt.Errorf("bench: no reports to combine")
	}
	out := reps[0]
	out.Entries = nil
	for _, r := range reps[1:] {
		if r.Tool != out.Tool || r.Device != out.Device {
			return Report{}, fmt.Errorf("bench: cannot combine a report of %s on %s with one of %s on %s", out.Tool, out.Device, r.Tool, r.Device)
		}
	}
	var order []string
	byName := map[string][]Result{}
	for _, rep := range reps {
		for _, r := range rep.Entries {
			if byName[r.Name] == nil {
				order = append(order, r.Name)
			}
			byName[r.Name] = append(byName[r.Name], r)
		}
	}
	for _, name := range order {
		rs := byName[name]
		var ms []float64
		var first *Result
		steps := 0
		for i := range rs {
			if rs[i].OK() {
				ms = append(ms, rs[i].MSPerStep)
				steps += rs[i].Steps
				if first == nil {
					first = &rs[i]
				}
			}
		}
		if first == nil {
			out.Entries = append(out.Entries, rs[0])
			continue
		}
		r := *first
		r.MSPerStep, r.Steps = median(ms), steps
		out.Entries = append(out.Entries, r)
	}
	return out, nil
}

// Row is one line of a comparison.
type Row struct {
	Name, Kind string
	// Ours and Peer are the ms/step of each side, 0 when not measured.
	Ours, Peer float64
	// Ratio is Ours / Peer (above 1: ours is slower), 0 unless both
	// sides measured the entry.
	Ratio float64
	// OurParams and PeerParams are the parameter counts of each side.
	OurParams, PeerParams int
	// Compile is our compile seconds.
	Compile float64
	// Note says why a ratio is missing or that the models differ.
	Note string
}

// Comparison pairs ours with peer by entry name, in our order, followed by
// entries only the peer has, and returns the rows and the geometric mean
// of the ratios over the models (not the fragments) that both measured,
// with how many there were.
func Comparison(ours, peer Report) (rows []Row, geomean float64, models int) {
	pm := map[string]Result{}
	for _, r := range peer.Entries {
		pm[r.Name] = r
	}
	seen := map[string]bool{}
	logSum := 0.0
	for _, o := range ours.Entries {
		seen[o.Name] = true
		row := Row{Name: o.Name, Kind: o.Kind, OurParams: o.Params, Compile: o.CompileSeconds}
		if o.OK() {
			row.Ours = o.MSPerStep
		}
		p, ok := pm[o.Name]
		switch {
		case !ok:
			row.Note = peer.Tool + " has no such entry"
		default:
			row.PeerParams = p.Params
			if p.OK() {
				row.Peer = p.MSPerStep
			}
			switch {
			case !o.OK():
				row.Note = "error: " + oneLine(o.Error)
			case !p.OK():
				row.Note = peer.Tool + " error: " + oneLine(p.Error)
			default:
				row.Ratio = row.Ours / row.Peer
			}
			if o.Params != p.Params && o.Params > 0 && p.Params > 0 {
				row.Note = strings.TrimSpace(row.Note + " parameter counts differ")
			}
			if o.Batch != p.Batch {
				row.Note = strings.TrimSpace(fmt.Sprintf("%s batch %d vs %d", row.Note, o.Batch, p.Batch))
			}
		}
		if row.Ratio > 0 && o.Kind == "model" {
			logSum += math.Log(row.Ratio)
			models++
		}
		rows = append(rows, row)
	}
	for _, p := range peer.Entries {
		if !seen[p.Name] {
			row := Row{Name: p.Name, Kind: p.Kind, PeerParams: p.Params, Note: "not measured by " + ours.Tool}
			if p.OK() {
				row.Peer = p.MSPerStep
			}
			rows = append(rows, row)
		}
	}
	if models > 0 {
		geomean = math.Exp(logSum / float64(models))
	}
	return rows, geomean, models
}

// Compare prints ours against peer: per entry both parameter counts, both
// ms/step and their ratio (ours ÷ peer: above 1 ours is slower), then the
// geometric mean of the ratios over the models.
func Compare(w io.Writer, ours, peer Report) {
	rows, gm, n := Comparison(ours, peer)
	fmt.Fprintf(w, "%s %s on %s (%s), %d threads, %s\n", ours.Tool, ours.Version, ours.Device, ours.DeviceName, ours.Threads, ours.Precision)
	fmt.Fprintf(w, "against %s %s on %s (%s), %d threads, %s\n", peer.Tool, peer.Version, peer.Device, peer.DeviceName, peer.Threads, peer.Precision)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "entry\tkind\tparams\t%s params\t%s ms\t%s ms\tratio\tcompile s\t\n", peer.Tool, ours.Tool, peer.Tool)
	ms := func(x float64) string {
		if x <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", x)
	}
	for _, r := range rows {
		ratio := "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		compile := "-"
		if r.Ours > 0 {
			compile = fmt.Sprintf("%.2f", r.Compile)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t  %s\n", r.Name, r.Kind, params(r.OurParams), params(r.PeerParams),
			ms(r.Ours), ms(r.Peer), ratio, compile, r.Note)
	}
	tw.Flush()
	if n > 0 {
		fmt.Fprintf(w, "geometric mean of %s/%s over %d models: %.2f (above 1: %s is slower)\n", ours.Tool, peer.Tool, n, gm, ours.Tool)
	} else {
		fmt.Fprintf(w, "no model was measured by both sides: no geometric mean\n")
	}
}
