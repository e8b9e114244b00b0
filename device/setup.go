package device

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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
	// (unless Device is set) and saving the configuration.
	Yes bool
}

// FormatTable writes the devices as an aligned table, numbered from 1, the
// recommended one marked with '*', followed by the notes and the install
// hint.
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
	fmt.Fprintln(tw, head+"\tID\tKIND\tNAME\tMEMORY\tUNITS\t")
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
		fmt.Fprintf(tw, " %s %d\t%s\t%s\t%s\t%s\t%d\t\n", mark, i+1, e.ID, e.Kind, e.Name, formatBytes(e.Memory), e.ComputeUnits)
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
func Setup(in io.Reader, out io.Writer, opts SetupOptions) (Config, error) {
	r := bufio.NewReaderSize(in, maxAnswer)
	l := List()
	fmt.Fprintln(out, "Tartan device setup")
	fmt.Fprintln(out)
	FormatTable(out, l)
	rec := l.Recommended()
	fmt.Fprintf(out, "\nRecommended: %s %s: %s.\n", rec.ID, rec.Name, rec.Why)

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

	fmt.Fprintf(out, "Checking %s %s: a small dense layer and softmax against the reference... ", chosen.ID, chosen.Name)
	dev, err := openDevice(chosen.ID)
	if err != nil {
		fmt.Fprintln(out, "failed.")
		return Config{}, fmt.Errorf("setup: opening %s: %w", chosen.ID, err)
	}
	res, err := Check(dev)
	dev.Close()
	if err != nil {
		fmt.Fprintln(out, "failed.")
		return Config{}, fmt.Errorf("setup: %w; the configuration was not changed", err)
	}
	fmt.Fprintf(out, "ok (largest difference %.1e; compile %s, run %s).\n", res.MaxError, res.Compile.Round(time.Millisecond), res.Run.Round(time.Microsecond))

	path, err := ConfigPath()
	if err != nil {
		return Config{}, fmt.Errorf("setup: %w", err)
	}
	if !opts.Yes {
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
	for range maxAttempts {
		fmt.Fprintf(out, "Save %s as the default device in %s? [Y/n]: ", id, path)
		ans, err := readAnswer(r)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(out)
			fmt.Fprintln(out, "Not saved: the input ended before an answer (end of input means no).")
			return fmt.Errorf("%w: the input ended before the answer to \"Save?\" (end of input means no)", ErrNotSaved)
		}
		if errors.Is(err, ErrNotSaved) {
			return err
		}
		if err != nil {
			return fmt.Errorf("setup: reading the answer: %w", err)
		}
		switch strings.ToLower(ans) {
		case "", "y", "yes":
			return nil
		case "n", "no":
			fmt.Fprintln(out, "Not saved.")
			return fmt.Errorf("%w: the answer to \"Save?\" was no", ErrNotSaved)
		}
		fmt.Fprintf(out, "%q is neither yes nor no; answer y or n.\n", ans)
	}
	fmt.Fprintln(out, "Not saved.")
	return fmt.Errorf("%w: %d answers to \"Save?\" were neither yes nor no", ErrNotSaved, maxAttempts)
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
