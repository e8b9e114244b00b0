package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/device"
)

// knownDeviceForms lists the device id forms the command line accepts.
const knownDeviceForms = "cpu, opencl:<platform>:<device>, vulkan:<index> (see tartan devices), reference"

// openDevice opens the device chosen by the flag value, else the
// TARTAN_DEVICE environment variable, else the configured device, else the
// best available one (device.Select). Warnings about the choice go to
// stderr. An id of no known form is a usage error.
func openDevice(flagValue string, stderr io.Writer) (backend.Device, device.Selection, error) {
	id, from := strings.TrimSpace(flagValue), "--device"
	if id == "" {
		id, from = strings.TrimSpace(os.Getenv(device.EnvDevice)), device.EnvDevice
	}
	if id != "" && id != "cpu" && id != "reference" && !strings.HasPrefix(id, "opencl:") && !strings.HasPrefix(id, "vulkan:") {
		return nil, device.Selection{}, usageError("unknown device %q from %s (known devices: %s)", id, from, knownDeviceForms)
	}
	if id != "" {
		if err := device.ValidID(id); err != nil {
			return nil, device.Selection{}, usageError("%s %s: %v", from, id, err)
		}
	}
	dev, sel, err := device.Select(flagValue)
	if err != nil {
		return nil, sel, err
	}
	if sel.Warning != "" {
		fmt.Fprintln(stderr, "tartan:", sel.Warning)
	}
	return dev, sel, nil
}

// devicesCommand lists the devices, the one a run uses and why, and the
// recommended one; with --measure it measures every device first.
func devicesCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tartan devices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	measure := fs.Bool("measure", false, "measure a training step on every device first, cache the figures and rank the backends of the same hardware by them")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageError("devices takes no arguments, got %q", fs.Args())
	}
	l := device.List()
	var measureErr error
	if *measure {
		progress := stdout
		if *asJSON {
			progress = stderr
		}
		var ids []string
		for _, e := range l.Devices {
			ids = append(ids, e.ID)
		}
		fmt.Fprintf(progress, "Measuring %s, on each device:\n", device.MeasureLine())
		_, measureErr = device.Measure(&l, ids, progress)
		if measureErr == nil {
			if path, err := device.MeasureCachePath(); err == nil {
				fmt.Fprintf(progress, "Saved in %s.\n", path)
			}
		}
		fmt.Fprintln(progress)
	}
	c := device.Choose(l)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			device.Listing
			Chosen device.Choice `json:"chosen"`
		}{l, c}); err != nil {
			return err
		}
		return measureErr
	}
	used := c.ID
	if c.Error != "" {
		used = ""
	}
	device.FormatTableUsing(stdout, l, used)
	fmt.Fprintln(stdout)
	if c.Error != "" {
		fmt.Fprintf(stdout, "A run without --device stops with an error: %s.\n", c.Error)
	} else {
		fmt.Fprintf(stdout, "> A run uses %s (%s): %s.\n", c.ID, c.Name, c.Why)
	}
	if c.Warning != "" {
		fmt.Fprintf(stdout, "  warning: %s.\n", c.Warning)
	}
	if r := l.Recommended(); c.Source != device.SourceRecommended {
		fmt.Fprintf(stdout, "* Recommended: %s (%s): %s.\n", r.ID, r.Name, l.Reason(r))
	}
	fmt.Fprintf(stdout, "Choose with --device ID for one run, %s=ID for a shell, or tartan setup for the default.\n", device.EnvDevice)
	if l.Hint != "" {
		fmt.Fprintf(stdout, "\n%s\n", l.Hint)
	}
	return measureErr
}

// setupCommand chooses the default device, checks it and saves the choice:
// interactively, or with --device ID --yes.
func setupCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tartan setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("device", "", "device id to configure (default: ask, recommending the best)")
	yes := fs.Bool("yes", false, "do not ask: configure --device (or the recommended device)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageError("setup takes no arguments, got %q", fs.Args())
	}
	if d := strings.TrimSpace(*id); d != "" {
		if err := device.ValidID(d); err != nil {
			return usageError("--device: %v", err)
		}
	}
	_, err := device.Setup(stdin, stdout, device.SetupOptions{Device: *id, Yes: *yes, Warnings: stderr})
	return err
}
