package device

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzParseConfig feeds arbitrary bytes to the config file parser: it must
// never panic, stay within the allocation bound, and every configuration
// it accepts must encode (as saveConfig writes it) to a file that parses
// back to the same configuration.
func FuzzParseConfig(f *testing.F) {
	for _, c := range []Config{
		{},
		{Device: "cpu"},
		{Device: "reference", Name: "reference"},
		{Device: "opencl:0:1", Name: "NVIDIA H200", Checked: "2026-01-02T03:04:05Z"},
		{Device: "opencl:1:0", Name: "pthread-znver3 <&> \u00e9", Checked: "2026-12-01T13:46:23Z"},
	} {
		b, err := encodeConfig(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "{", "null", "[]", `{"device": 5}`, `{"device": "gpu"}`, `{"device":"cpu"} x`,
		`{"DEVICE":"cpu","device":"reference"}`, `{"name":"\ud800"}`, "{\"name\":\"\xff\"}",
		`{"device":"opencl:99999999999999999999:0"}`, `{"extra":{"nested":[1,2,3]},"device":"cpu"}`,
	} {
		f.Add([]byte(s))
	}
	const path = "/fuzz/tartan/config.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			c, err := parseConfig(path, data)
			if err != nil {
				if !strings.Contains(err.Error(), path) {
					t.Fatalf("error %q does not name the file", err)
				}
				if c != (Config{}) {
					t.Fatalf("error %v with a config %+v", err, c)
				}
				return
			}
			enc, err := encodeConfig(c)
			if err != nil {
				// Only a configuration whose encoding is too large may
				// fail to encode.
				if len(c.Device)+len(c.Name)+len(c.Checked) < MaxConfigSize/6-64 {
					t.Fatalf("accepted %+v but cannot encode it: %v", c, err)
				}
				return
			}
			back, err := parseConfig(path, enc)
			if err != nil {
				t.Fatalf("accepted %q as %+v, but its encoding %q is refused: %v", data, c, enc, err)
			}
			if back != c {
				t.Fatalf("round trip: %q parsed as %+v, encoded as %q, parsed back as %+v", data, c, enc, back)
			}
		})
	})
}
