package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/reference"
)

// deviceEntry is one device the command line can open.
type deviceEntry struct {
	id   string
	open func() (backend.Device, error)
}

// devices lists the devices in order of preference: the first that opens is
// the best available. Adding a backend is one line here.
var devices = []deviceEntry{
	{"cpu", func() (backend.Device, error) { return cpu.New(), nil }},
	{"reference", func() (backend.Device, error) { return reference.New(), nil }},
}

// deviceIDs returns the known device ids.
func deviceIDs() []string {
	ids := make([]string, len(devices))
	for i, d := range devices {
		ids[i] = d.id
	}
	return ids
}

// openDevice opens the device chosen by the flag value, else the
// TARTAN_DEVICE environment variable, else the best available one. It
// returns the device and where the choice came from.
func openDevice(flagValue string) (backend.Device, string, error) {
	id, from := flagValue, "--device"
	if id == "" {
		id, from = os.Getenv("TARTAN_DEVICE"), "TARTAN_DEVICE"
	}
	if id == "" {
		var errs []string
		for _, d := range devices {
			dev, err := d.open()
			if err == nil {
				return dev, "best available", nil
			}
			errs = append(errs, fmt.Sprintf("%s: %v", d.id, err))
		}
		return nil, "", fmt.Errorf("no device could be opened (%s)", strings.Join(errs, "; "))
	}
	for _, d := range devices {
		if d.id == id {
			dev, err := d.open()
			if err != nil {
				return nil, "", fmt.Errorf("device %q (from %s): %w", id, from, err)
			}
			return dev, from, nil
		}
	}
	return nil, "", usageError("unknown device %q from %s (known devices: %s)", id, from, strings.Join(deviceIDs(), ", "))
}

// devicesCommand lists the devices with their descriptions.
func devicesCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tartan devices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageError("devices takes no arguments, got %q", fs.Args())
	}
	var infos []backend.Info
	for _, d := range devices {
		dev, err := d.open()
		if err != nil {
			fmt.Fprintf(stderr, "tartan: device %s is unavailable: %v\n", d.id, err)
			continue
		}
		infos = append(infos, dev.Info())
		dev.Close()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(infos)
	}
	for i, in := range infos {
		note := ""
		if i == 0 {
			note = "  (default)"
		}
		fmt.Fprintf(stdout, "%-10s %s, %d compute units%s\n", in.ID, in.Name, in.ComputeUnits, note)
	}
	return nil
}
