package device

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Config is the content of $XDG_CONFIG_HOME/tartan/config.json.
type Config struct {
	// Device is the id of the device to use, such as "opencl:0:0".
	Device string `json:"device"`
	// Name is the device's name when it was chosen, so that a different
	// device at the same id can be noticed.
	Name string `json:"name,omitempty"`
	// Checked is when setup's correctness check passed (RFC 3339).
	Checked string `json:"checked,omitempty"`
}

// ConfigPath returns $XDG_CONFIG_HOME/tartan/config.json, or
// ~/.config/tartan/config.json when XDG_CONFIG_HOME is unset.
func ConfigPath() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "tartan", "config.json"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return "", fmt.Errorf("no configuration directory: $XDG_CONFIG_HOME is unset and the home directory is unknown (%v)", err)
	}
	return filepath.Join(h, ".config", "tartan", "config.json"), nil
}

// LoadConfig reads the config file. A missing file is an empty Config, not
// an error; an unreadable or malformed file is an error naming it.
func LoadConfig() (Config, error) {
	path, err := ConfigPath()
	if err != nil {
		return Config{}, nil
	}
	return loadConfig(path)
}

func loadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("config file %s is not valid JSON: %w", path, err)
	}
	return c, nil
}

// SaveConfig writes c to the config file atomically: to a temporary file in
// the same directory, then renamed over the old file, so that a crash leaves
// either the old or the new configuration.
func SaveConfig(c Config) (string, error) {
	path, err := ConfigPath()
	if err != nil {
		return "", err
	}
	return path, saveConfig(path, c)
}

func saveConfig(path string, c Config) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
