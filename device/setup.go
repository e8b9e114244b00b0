package device

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// SetupOptions controls Setup.
type SetupOptions struct {
	// Device is the id to configure; empty means ask (or, with Yes, take
	// the recommended device).
	Device string
	// Yes answers every question with its default: the recommended device
	// (unless Device is set) and saving the configuration, even a device
	// much slower than the recommended one (which is warned about).
	Yes bool
	// Warnings receives the warnings of a setup with Yes, which asks
	// nothing (the CLI passes stderr); nil means the output.
	Warnings io.Writer
}

// slowRatio is how many times slower than the recommended device the
// chosen one must run the check's product for Setup to warn.
const slowRatio = 3

// FormatTable writes the devices as an aligned table, numbered from 1, the
// recommended one marked with '*', followed by the notes and the install
// hint. When a device has a measurement, a STEP column shows each one's
// measured training step.
func FormatTable(w io.Writer, l Listing) { formatTable(w, l, false, "") }

// FormatTableUsing is FormatTable with the device a run uses (the id
// used, as Choose gives it) marked with '>' before the recommendation
// mark, followed by the notes but not the hint. No row is marked '>' when
// used is not listed.
func FormatTableUsing(w io.Writer, l Listing, used string) { formatTable(w, l, true, used) }

func formatTable(w io.Writer, l Listing, markUsed bool, used string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "   #"
	if markUsed {
		head = "    #"
	}
	measured := slices.ContainsFunc(l.Devices, func(e Entry) bool { return e.Measured != nil })
	head += "\tID\tKIND\tNAME\tMEMORY\tUNITS\t"
	if measured {
		head += "STEP\t"
	}
	fmt.Fprintln(tw, head)
	for i, e := range l.Devices {
		mark := " "
		if e.Recommended {
			mark = "*"
		}
		if markUsed {
			if e.ID == used {
				mark = ">" + mark
			} else {
				mark = " " + mark
			}
		}
		units := "-" // not reported (Vulkan)
		if e.ComputeUnits > 0 {
			units = fmt.Sprint(e.ComputeUnits)
		}
		fmt.Fprintf(tw, " %s %d\t%s\t%s\t%s\t%s\t%s\t", mark, i+1, e.ID, e.Kind, e.Name, formatBytes(e.Memory), units)
		if measured {
			step := "-" // not measured
			if e.Measured != nil {
				step = formatDuration(e.Measured.Step)
			}
			fmt.Fprintf(tw, "%s\t", step)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, n := range l.Notes {
		// A note's later lines (the libraries tried) are indented under
		// its text.
		fmt.Fprintf(w, "   note: %s\n", strings.ReplaceAll(n, "\n", "\n         "))
	}
	if l.Hint != "" && !markUsed {
		fmt.Fprintf(w, "\n%s\n", l.Hint)
	}
}

func formatBytes(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1<<30:
		return fmt.Sprintf("%.0f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// ErrNotSaved is matched (with errors.Is) by the error Setup returns when
// it saved nothing because the answer was no: the user declined, the input
// ended before an answer (end of input means no, so that setup run without
// a terminal never changes the configuration), or too many answers were not
// understood.
var ErrNotSaved = errors.New("setup: nothing was saved")

// maxAttempts bounds how often Setup asks a question again after an answer
// it does not understand, so that endless wrong input cannot keep it
// asking forever.
const maxAttempts = 5

// Setup is the interactive device setup: it lists every device, says which
// is recommended and why, asks which to use (the default is the
// recommended one), runs the correctness check on it and saves the choice
// in the config file. With opts.Device and opts.Yes it asks nothing. An
// empty answer takes the default; input that ends before an answer is no:
// Setup then saves nothing and returns an error matching ErrNotSaved, as
// it does when the user declines. It returns the saved configuration;
// nothing is saved when the check fails.
//
// Before listing, Setup measures the training step (Measure) on the
// devices that reach the same hardware as another and have no measurement
// in the cache, so that the recommendation among them is by measured
// speed.
//
// When the chosen device is not the recommended one, Setup checks the
// recommended one too and compares the times of the check's product: if
// the chosen device is at least slowRatio times slower, it asks whether to
// save it anyway (the default is no), or with Yes warns and saves it.
func Setup(in io.Reader, out io.Writer, opts SetupOptions) (Config, error) {
	r := bufio.NewReaderSize(in, maxAnswer)
	l := listDevices()
	if opts.Device != "" {
		if _, ok := l.Find(strings.TrimSpace(opts.Device)); !ok {
			return Config{}, fmt.Errorf("setup: no device %q; devices: %s", opts.Device, l.IDs())
		}
	}
	fmt.Fprintln(out, "Tartan device setup")
	fmt.Fprintln(out)
	warnings := opts.Warnings
	if warnings == nil {
		warnings = out
	}
	if ids := unmeasured(l); len(ids) > 0 {
		fmt.Fprintf(out, "Measuring %s, on the devices that reach the same hardware:\n", MeasureLine())
		if _, err := Measure(&l, ids, out); err != nil {
			fmt.Fprintf(warnings, "tartan: warning: %v\n", err)
		}
		fmt.Fprintln(out)
	}
	FormatTable(out, l)
	rec := l.Recommended()
	fmt.Fprintf(out, "\nRecommended: %s %s: %s.\n", rec.ID, rec.Name, l.Reason(rec))

	var chosen Entry
	switch {
	case opts.Device != "":
		e, ok := l.Find(strings.TrimSpace(opts.Device))
		if !ok {
			return Config{}, fmt.Errorf("setup: no device %q; devices: %s", opts.Device, l.IDs())
		}
		chosen = e
	case opts.Yes:
		chosen = rec
	default:
		def := 1
		for i, e := range l.Devices {
			if e.Recommended {
				def = i + 1
			}
		}
		var err error
		chosen, err = askDevice(r, out, l, def)
		if err != nil {
			return Config{}, err
		}
	}

	fmt.Fprintf(out, "Checking %s %s: a small dense layer and softmax against the reference, then a %d×%d product for speed... ", chosen.ID, chosen.Name, speedSize, speedSize)
	res, err := checkByID(chosen.ID)
	if err != nil {
		fmt.Fprintln(out, "failed.")
		return Config{}, fmt.Errorf("setup: %w; the configuration was not changed", err)
	}
	fmt.Fprintf(out, "ok (%s).\n", formatCheck(res))

	// Compare with the recommended device, which List may have ranked
	// above the chosen one by kind alone.
	var slow string
	if rec.ID != chosen.ID {
		fmt.Fprintf(out, "Checking the recommended %s %s to compare... ", rec.ID, rec.Name)
		rres, err := checkByID(rec.ID)
		switch {
		case err != nil:
			fmt.Fprintf(out, "failed, so not compared: %v.\n", err)
		default:
			fmt.Fprintf(out, "ok (%s).\n", formatCheck(rres))
			if rres.Speed > 0 && float64(res.Speed) >= slowRatio*float64(rres.Speed) {
				slow = fmt.Sprintf("%s (%s) ran the check %s slower than %s (%s): the product took %s against %s",
					chosen.ID, chosen.Name, formatRatio(float64(res.Speed)/float64(rres.Speed)), rec.ID, rec.Name,
					formatDuration(res.Speed), formatDuration(rres.Speed))
			}
		}
	}

	path, err := ConfigPath()
	if err != nil {
		return Config{}, fmt.Errorf("setup: %w", err)
	}
	switch {
	case slow != "" && opts.Yes:
		fmt.Fprintf(warnings, "tartan: warning: %s; saving it as --device and --yes ask (tartan setup --device %s --yes saves the faster one)\n", slow, rec.ID)
	case slow != "":
		q := yesNo{
			question: fmt.Sprintf("%s.\nSave %s as the default device in %s anyway? [y/N]: ", slow, chosen.ID, path),
			name:     "Save anyway?",
			no:       fmt.Sprintf("Not saved: run tartan setup again to choose another device, or tartan setup --device %s --yes for %s.", rec.ID, rec.ID),
		}
		if err := q.ask(r, out); err != nil {
			return Config{}, err
		}
	case !opts.Yes:
		if err := askSave(r, out, chosen.ID, path); err != nil {
			return Config{}, err
		}
	}
	cfg := Config{Device: chosen.ID, Name: chosen.Name, Checked: time.Now().UTC().Format(time.RFC3339)}
	if err := saveConfig(path, cfg); err != nil {
		return Config{}, fmt.Errorf("setup: %w", err)
	}
	fmt.Fprintf(out, "Saved: Tartan now uses %s (%s). Override with --device ID or $%s.\n", chosen.ID, chosen.Name, EnvDevice)
	return cfg, nil
}

// unmeasured lists the devices of l that Setup measures: those that reach
// the same hardware as another (where the measurement decides their
// order), can be used, and have no measurement for their name and driver
// in the cache.
func unmeasured(l Listing) []string {
	var ids []string
	for _, e := range l.Devices {
		if len(e.SameHardware) > 0 && e.rank > 0 && e.Measured == nil {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// Hooks that tests replace: the listing Setup offers, and the check it
// runs on a device.
var (
	listDevices = List
	checkDevice = Check
)

// checkByID opens the device id, checks it and closes it.
func checkByID(id string) (CheckResult, error) {
	dev, err := openDevice(id)
	if err != nil {
		return CheckResult{}, fmt.Errorf("opening %s: %w", id, err)
	}
	defer dev.Close()
	return checkDevice(dev)
}

// formatCheck describes a passed check.
func formatCheck(res CheckResult) string {
	return fmt.Sprintf("largest difference %.1e; compile %s, run %s; product %s",
		res.MaxError, formatDuration(res.Compile), formatDuration(res.Run), formatDuration(res.Speed))
}

// formatDuration writes d with about three significant digits.
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%d µs", d.Microseconds())
}

// formatRatio writes a ratio of times: "48×", or "4.6×" below 10.
func formatRatio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.1f×", x)
}

// askDevice asks which device to use until the answer names one (by number
// or id, the empty answer taking number def), at most maxAttempts times.
func askDevice(r *bufio.Reader, out io.Writer, l Listing, def int) (Entry, error) {
	for range maxAttempts {
		fmt.Fprintf(out, "Which device should Tartan use? Enter a number or an id [%d]: ", def)
		ans, err := readAnswer(r)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(out)
			fmt.Fprintln(out, "Not saved: the input ended before a device was chosen.")
			return Entry{}, fmt.Errorf("%w: the input ended before a device was chosen (run tartan setup in a terminal, or tartan setup --device ID --yes)", ErrNotSaved)
		}
		if errors.Is(err, ErrNotSaved) {
			return Entry{}, err
		}
		if err != nil {
			return Entry{}, fmt.Errorf("setup: reading the answer: %w", err)
		}
		if ans == "" {
			return l.Devices[def-1], nil
		}
		if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(l.Devices) {
			return l.Devices[n-1], nil
		}
		if e, ok := l.Find(ans); ok {
			return e, nil
		}
		fmt.Fprintf(out, "%q is not one of the devices; enter 1 to %d or an id such as %s.\n", ans, len(l.Devices), l.Devices[0].ID)
	}
	fmt.Fprintln(out, "Not saved: no device was chosen.")
	return Entry{}, fmt.Errorf("%w: %d answers named no device", ErrNotSaved, maxAttempts)
}

// askSave asks whether to save id as the default device in path. It
// returns nil for yes (or the empty answer) and an error matching
// ErrNotSaved for no, for input that ends, and after maxAttempts answers
// that are neither.
func askSave(r *bufio.Reader, out io.Writer, id, path string) error {
	q := yesNo{question: fmt.Sprintf("Save %s as the default device in %s? [Y/n]: ", id, path),
		name: "Save?", yes: true, no: "Not saved."}
	return q.ask(r, out)
}

// yesNo is a question whose answer is yes or no.
type yesNo struct {
	question string // as printed, with the choices
	name     string // as errors name it, such as "Save?"
	yes      bool   // the empty answer is yes (else no)
	no       string // printed when the answer is no
}

// ask asks q until the answer is yes or no, at most maxAttempts times. It
// returns nil for yes and an error matching ErrNotSaved for no, for input
// that ends, and after maxAttempts answers that are neither.
func (q yesNo) ask(r *bufio.Reader, out io.Writer) error {
	for range maxAttempts {
		fmt.Fprint(out, q.question)
		ans, err := readAnswer(r)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(out)
			fmt.Fprintln(out, "Not saved: the input ended before an answer (end of input means no).")
			return fmt.Errorf("%w: the input ended before the answer to %q (end of input means no)", ErrNotSaved, q.name)
		}
		if errors.Is(err, ErrNotSaved) {
			return err
		}
		if err != nil {
			return fmt.Errorf("setup: reading the answer: %w", err)
		}
		a := strings.ToLower(ans)
		if a == "" {
			a = "n"
			if q.yes {
				a = "y"
			}
		}
		switch a {
		case "y", "yes":
			return nil
		case "n", "no":
			fmt.Fprintln(out, q.no)
			return fmt.Errorf("%w: the answer to %q was no", ErrNotSaved, q.name)
		}
		fmt.Fprintf(out, "%q is neither yes nor no; answer y or n.\n", ans)
	}
	fmt.Fprintln(out, "Not saved.")
	return fmt.Errorf("%w: %d answers to %q were neither yes nor no", ErrNotSaved, maxAttempts, q.name)
}

// maxAnswer bounds the length of one answer line, so that input without
// newlines (such as /dev/zero) cannot make Setup read without end.
const maxAnswer = 4096

// readAnswer reads one line, trimmed. A last line without a newline is an
// answer too; input that ends with no answer at all gives io.EOF. A line
// longer than maxAnswer is an error matching ErrNotSaved.
func readAnswer(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	ans := strings.TrimSpace(string(line))
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return "", fmt.Errorf("%w: an answer is longer than %d bytes (is the input a terminal?)", ErrNotSaved, maxAnswer)
	case errors.Is(err, io.EOF) && ans == "":
		return "", io.EOF
	case errors.Is(err, io.EOF):
		return ans, nil
	}
	return ans, err
}
