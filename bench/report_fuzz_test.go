package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzParseReport feeds arbitrary bytes to ParseReport: it never panics,
// a report it accepts survives encoding and decoding unchanged, and
// combining and comparing accepted reports never panics either.
func FuzzParseReport(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"tool": "pytorch", "entries": [{"name": "mlp", "kind": "model", "ms_per_step": 1.5, "steps": 2}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			rep, err := ParseReport(b, "fuzz.json")
			if err != nil {
				return
			}
			again, err := json.Marshal(rep)
			if err != nil {
				t.Fatalf("accepted report does not encode: %v", err)
			}
			back, err := ParseReport(again, "again.json")
			if err != nil {
				t.Fatalf("re-encoded report rejected: %v\n%s", err, again)
			}
			if !reflect.DeepEqual(rep, back) {
				t.Fatalf("round trip changed the report:\n%+v\n%+v", rep, back)
			}
			if _, err := MedianReport([]Report{rep, back}); err != nil {
				t.Fatalf("combining a report with itself: %v", err)
			}
			Comparison(rep, back)
		})
	})
}
