package device

import (
	"fmt"
	"os"
	"strings"

	"github.com/tartanml/tartan/backend/reference"
)

// Where the device of a run without --device comes from (Choice.Source).
const (
	SourceEnv         = "environment" // $TARTAN_DEVICE
	SourceConfig      = "config"      // the config file that tartan setup writes
	SourceRecommended = "recommended" // nothing is configured: the recommended device
	SourceFallback    = "fallback"    // the configuration cannot be used: the CPU backend
)

// Choice is the device a run without a --device flag uses, and why, as
// Select decides it but without opening the device.
type Choice struct {
	// ID is the device's id; with Error set, the id that cannot be used.
	ID string `json:"id"`
	// Name is the device's name, empty when the listing lacks the device.
	Name string `json:"name,omitempty"`
	// Source is one of the Source constants.
	Source string `json:"source"`
	// ConfigFile is the config file's path when it chose the device or
	// could not be used.
	ConfigFile string `json:"config_file,omitempty"`
	// Why explains the choice in words (no final period).
	Why string `json:"why"`
	// Warning is what a run warns about: the configured device is a
	// different one than at setup.
	Warning string `json:"warning,omitempty"`
	// Error is set when a run cannot start: $TARTAN_DEVICE holds no usable
	// device id.
	Error string `json:"error,omitempty"`
}

// Choose says which device of l a run without --device uses: the one
// $TARTAN_DEVICE names, else the configured one, else the recommended one;
// a configuration that cannot be used (a damaged file, a device that is not
// listed) gives the CPU backend, as Select does.
func Choose(l Listing) Choice {
	path, _ := ConfigPath()
	cfg, cfgErr := LoadConfig()
	if env := strings.TrimSpace(os.Getenv(EnvDevice)); env != "" {
		c := Choice{ID: env, Source: SourceEnv}
		if err := ValidID(env); err != nil {
			c.Error = fmt.Sprintf("$%s=%s: %v", EnvDevice, env, err)
			return c
		}
		name, ok := nameOf(l, env)
		if !ok {
			c.Error = fmt.Sprintf("$%s=%s names no device listed (the ids are %s)", EnvDevice, env, l.IDs())
			return c
		}
		c.Name = name
		c.Why = "set by $" + EnvDevice
		if cfgErr == nil && cfg.Device != "" && cfg.Device != env {
			c.Why += fmt.Sprintf(", which overrides the configured %s (%s)", cfg.Device, path)
		}
		return c
	}
	cpuName, _ := nameOf(l, "cpu")
	if cfgErr != nil {
		return Choice{ID: "cpu", Name: cpuName, Source: SourceFallback, ConfigFile: path,
			Why: fmt.Sprintf("%v, so a run falls back to the CPU backend (run tartan setup to fix the configuration)", cfgErr)}
	}
	if cfg.Device != "" {
		name, ok := nameOf(l, cfg.Device)
		if !ok {
			return Choice{ID: "cpu", Name: cpuName, Source: SourceFallback, ConfigFile: path,
				Why: fmt.Sprintf("the configured device %s (%s) is not listed, so a run falls back to the CPU backend (run tartan setup to choose again)", cfg.Device, path)}
		}
		c := Choice{ID: cfg.Device, Name: name, Source: SourceConfig, ConfigFile: path,
			Why: "configured in " + path + " (by tartan setup)"}
		if cfg.Name != "" && cfg.Name != name {
			c.Warning = fmt.Sprintf("the configured device %s was %q at setup and is now %q (run tartan setup to choose again)", cfg.Device, cfg.Name, name)
		}
		return c
	}
	r := l.Recommended()
	return Choice{ID: r.ID, Name: r.Name, Source: SourceRecommended,
		Why: "no device is configured, so a run takes the recommended one (*): " + l.Reason(r)}
}

// nameOf returns the name of the device with the given id: from l, or the
// reference executor's, which l does not list.
func nameOf(l Listing, id string) (string, bool) {
	if id == "reference" {
		return reference.New().Info().Name, true
	}
	e, ok := l.Find(id)
	return e.Name, ok
}
