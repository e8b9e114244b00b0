package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/internal/fileinfo"
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
	return backend.UserPath("XDG_CONFIG_HOME", ".config", "configuration", "config.json")
}

// LoadConfig reads the config file. A missing file is an empty Config, not
// an error; a file that cannot be used (not a regular file, unreadable,
// larger than MaxConfigSize, empty, truncated, malformed, or naming no
// valid device id) is an error naming it.
func LoadConfig() (Config, error) {
	path, err := ConfigPath()
	if err != nil {
		return Config{}, nil
	}
	return loadConfig(path)
}

// MaxConfigSize bounds the config file: it holds three short strings, so a
// larger file is not one that setup wrote.
const MaxConfigSize = 64 << 10

func loadConfig(path string) (Config, error) {
	// Stat before opening: opening a FIFO would wait for a writer forever.
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return Config{}, fmt.Errorf("config file %s is %s, not a regular file", path, fileinfo.Kind(fi.Mode()))
	}
	if fi.Size() > MaxConfigSize {
		return Config{}, fmt.Errorf("config file %s is %d bytes, more than the %d a configuration can take (not written by tartan setup?)", path, fi.Size(), MaxConfigSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading config file %s: %w", path, err)
	}
	defer f.Close()
	// The file may have grown since the Stat: read one byte more than the
	// bound to notice.
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("reading config file %s: %w", path, err)
	}
	return parseConfig(path, data)
}

// parseConfig decodes the content of the config file path. The content must
// be one JSON object whose device, when set, is a device id of a known
// form (see ValidID); unknown fields are ignored, for files written by later
// versions.
func parseConfig(path string, data []byte) (Config, error) {
	var c Config
	if len(data) > MaxConfigSize {
		return Config{}, fmt.Errorf("config file %s is more than %d bytes (not written by tartan setup?)", path, MaxConfigSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, fmt.Errorf("config file %s is empty (truncated?)", path)
	}
	if bytes.TrimSpace(data)[0] != '{' {
		return Config{}, fmt.Errorf("config file %s does not hold a JSON object", path)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Config{}, fmt.Errorf("config file %s is truncated: it ends inside its JSON object", path)
		}
		return Config{}, fmt.Errorf("config file %s is not valid JSON: %w", path, err)
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return Config{}, fmt.Errorf("config file %s is not valid JSON: more follows its object at byte %d", path, off)
	}
	if c.Device != "" {
		if err := ValidID(c.Device); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	return c, nil
}

// encodeConfig is the config file's content for c: indented JSON that
// parseConfig reads back as c. It fails when that would be larger than
// MaxConfigSize.
func encodeConfig(c Config) ([]byte, error) {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if len(data) >= MaxConfigSize {
		return nil, fmt.Errorf("the configuration is %d bytes as JSON, more than a config file may hold (%d)", len(data)+1, MaxConfigSize)
	}
	return append(data, '\n'), nil
}

// idForms lists the device id forms, for messages.
const idForms = "cpu, opencl:<platform>:<device>, vulkan:<index> (see tartan devices) or reference"

// ValidID reports whether id has one of the forms Open accepts: "cpu",
// "reference", "opencl:<platform>:<device>" or "vulkan:<index>". It does
// not check that the device exists.
func ValidID(id string) error {
	switch {
	case id == "cpu", id == "reference":
		return nil
	case strings.HasPrefix(id, "opencl:"):
		_, _, err := opencl.ParseID(id)
		return err
	case strings.HasPrefix(id, "vulkan:"):
		_, err := vulkan.ParseID(id)
		return err
	}
	return fmt.Errorf("unknown device %q: want %s", id, idForms)
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
	if c.Device != "" {
		if err := ValidID(c.Device); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	data, err := encodeConfig(c)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return writeAtomic(path, data, ".config-*.json")
}
