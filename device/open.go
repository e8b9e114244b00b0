package device

import (
	"fmt"
	"os"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/backend/vulkan"
)

// EnvDevice names the environment variable that selects a device when no
// --device flag does.
const EnvDevice = "TARTAN_DEVICE"

// Open opens the device with the given id: "cpu", "opencl:<platform>:<device>",
// "vulkan:<index>" or "reference" (the slow float64 oracle, for debugging).
func Open(id string) (backend.Device, error) {
	id = strings.TrimSpace(id)
	switch {
	case id == "cpu":
		return cpu.New(), nil
	case id == "reference":
		return reference.New(), nil
	case strings.HasPrefix(id, "opencl:"):
		if _, _, err := opencl.ParseID(id); err != nil {
			return nil, err
		}
		cs, err := openclList()
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", id, err)
		}
		var have []string
		for _, c := range cs {
			if c.ID == id {
				d, err := opencl.OpenCandidate(c)
				if err != nil {
					// Not d: a nil *opencl.Device in the interface is not nil.
					return nil, err
				}
				return d, nil
			}
			have = append(have, c.ID+" ("+c.Device.Name()+")")
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("device %s: no OpenCL devices found", id)
		}
		return nil, fmt.Errorf("device %s not found; OpenCL devices: %s", id, strings.Join(have, ", "))
	case strings.HasPrefix(id, "vulkan:"):
		if _, err := vulkan.ParseID(id); err != nil {
			return nil, err
		}
		cs, err := vulkanList()
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", id, err)
		}
		var have []string
		for _, c := range cs {
			if c.ID == id {
				d, err := vulkan.OpenCandidate(c)
				if err != nil {
					return nil, err // not d: see above
				}
				return d, nil
			}
			have = append(have, c.ID+" ("+c.Device.Name+")")
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("device %s: no Vulkan devices found", id)
		}
		return nil, fmt.Errorf("device %s not found; Vulkan devices: %s", id, strings.Join(have, ", "))
	}
	return nil, fmt.Errorf("unknown device %q: want %s", id, idForms)
}

// Selection says which device was chosen and why.
type Selection struct {
	ID string
	// Source is where the choice came from: "--device flag", "$TARTAN_DEVICE",
	// the config file's path, or "best available".
	Source string
	// Warning is set when the configured device could not be used and the
	// CPU was taken instead, or when the device at the configured id is no
	// longer the one that was set up.
	Warning string
}

// String describes the selection on one line.
func (s Selection) String() string {
	if s.Warning != "" {
		return s.Warning
	}
	return fmt.Sprintf("device %s (from %s)", s.ID, s.Source)
}

// Select opens the device to use, in this order: flag (the --device value;
// empty when not given), then $TARTAN_DEVICE, then the config file, then the
// best device available. A device named by the flag or the environment must
// open, or Select fails; a device from the config file that is missing or
// fails to open falls back to the CPU with a warning in the Selection.
func Select(flag string) (backend.Device, Selection, error) {
	if flag = strings.TrimSpace(flag); flag != "" {
		d, err := Open(flag)
		if err != nil {
			return nil, Selection{}, fmt.Errorf("--device %s: %w", flag, err)
		}
		return d, Selection{ID: flag, Source: "--device flag"}, nil
	}
	if env := strings.TrimSpace(os.Getenv(EnvDevice)); env != "" {
		d, err := Open(env)
		if err != nil {
			return nil, Selection{}, fmt.Errorf("$%s=%s: %w", EnvDevice, env, err)
		}
		return d, Selection{ID: env, Source: "$" + EnvDevice}, nil
	}
	path, _ := ConfigPath()
	cfg, err := LoadConfig()
	if err != nil {
		// A damaged config file must not stop work: say so and go on.
		d := cpu.New()
		return d, Selection{ID: "cpu", Source: "fallback",
			Warning: fmt.Sprintf("warning: %v; using cpu (run tartan setup to fix the configuration)", err)}, nil
	}
	if cfg.Device != "" {
		d, err := Open(cfg.Device)
		if err == nil {
			sel := Selection{ID: cfg.Device, Source: path}
			if name := d.Info().Name; cfg.Name != "" && name != cfg.Name {
				// Ids are positions; hardware or driver changes can move a
				// different device to the configured one.
				sel.Warning = fmt.Sprintf("warning: the configured device %s was %q at setup and is now %q; using it (run tartan setup to choose again)",
					cfg.Device, cfg.Name, name)
			}
			return d, sel, nil
		}
		return cpu.New(), Selection{ID: "cpu", Source: "fallback",
			Warning: fmt.Sprintf("warning: the configured device %s (%s) cannot be used: %v; using cpu (run tartan setup to choose again)", cfg.Device, path, err)}, nil
	}
	best := List().Recommended()
	d, err := Open(best.ID)
	if err != nil {
		if best.ID == "cpu" {
			return nil, Selection{}, err
		}
		return cpu.New(), Selection{ID: "cpu", Source: "fallback",
			Warning: fmt.Sprintf("warning: the best device %s (%s) failed to open: %v; using cpu", best.ID, best.Name, err)}, nil
	}
	return d, Selection{ID: best.ID, Source: "best available"}, nil
}

// openDevice opens devices for Setup; tests replace it.
var openDevice = Open
