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
// recommended one marked with '*', followed by the notes.
func FormatTable(w io.Writer, l Listing) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "   #\tID\tKIND\tNAME\tMEMORY\tUNITS\t")
	for i, e := range l.Devices {
		mark := " "
		if e.Recommended {
			mark = "*"
		}
		fmt.Fprintf(tw, " %s %d\t%s\t%s\t%s\t%s\t%d\t\n", mark, i+1, e.ID, e.Kind, e.Name, formatBytes(e.Memory), e.ComputeUnits)
	}
	tw.Flush()
	for _, n := range l.Notes {
		fmt.Fprintf(w, "   note: %s\n", n)
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

// Setup is the interactive device setup: it lists every device, says which
// is recommended and why, asks which to use (the default is the
// recommended one), runs the correctness check on it and saves the choice
// in the config file. With opts.Device and opts.Yes it asks nothing. An
// answer left empty, or input that ends, takes the default. It returns the
// saved configuration; nothing is saved when the check fails.
func Setup(in io.Reader, out io.Writer, opts SetupOptions) (Config, error) {
	r := bufio.NewReader(in)
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
		for {
			fmt.Fprintf(out, "Which device should Tartan use? Enter a number or an id [%d]: ", def)
			ans, err := readAnswer(r)
			if err != nil {
				return Config{}, fmt.Errorf("setup: reading the answer: %w", err)
			}
			if ans == "" {
				chosen = l.Devices[def-1]
				break
			}
			if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(l.Devices) {
				chosen = l.Devices[n-1]
				break
			}
			if e, ok := l.Find(ans); ok {
				chosen = e
				break
			}
			fmt.Fprintf(out, "%q is not one of the devices; enter 1 to %d or an id such as %s.\n", ans, len(l.Devices), l.Devices[0].ID)
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
		fmt.Fprintf(out, "Save %s as the default device in %s? [Y/n]: ", chosen.ID, path)
		ans, err := readAnswer(r)
		if err != nil {
			return Config{}, fmt.Errorf("setup: reading the answer: %w", err)
		}
		if a := strings.ToLower(ans); a == "n" || a == "no" {
			fmt.Fprintln(out, "Not saved.")
			return Config{}, nil
		}
	}
	cfg := Config{Device: chosen.ID, Name: chosen.Name, Checked: time.Now().UTC().Format(time.RFC3339)}
	if err := saveConfig(path, cfg); err != nil {
		return Config{}, fmt.Errorf("setup: %w", err)
	}
	fmt.Fprintf(out, "Saved: Tartan now uses %s (%s). Override with --device ID or $%s.\n", chosen.ID, chosen.Name, EnvDevice)
	return cfg, nil
}

// readAnswer reads one line; input that ends gives the empty (default)
// answer.
func readAnswer(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if errors.Is(err, io.EOF) {
		return strings.TrimSpace(line), nil
	}
	return strings.TrimSpace(line), err
}
