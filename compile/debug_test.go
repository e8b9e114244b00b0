package compile

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestDebugReports(t *testing.T) {
	var buf bytes.Buffer
	old := debugOut
	debugOut = &buf
	defer func() { debugOut = old }()
	g := tile.NewGraph("debugged")
	buildAdam(g)
	cases := []struct {
		env  string
		want []string
		not  []string
	}{
		{"", nil, []string{"tartan"}},
		{"kernels", []string{`program "debugged"`, "kernel k0_contraction", "schedule: gemm"}, []string{"tartan memory"}},
		{"schedule", []string{`tartan schedule "debugged"`, "k0_contraction: gemm: 4×2×3; batch 0, M 1, N 1, K 1 loops"}, []string{"kernel k1"}},
		{"memory", []string{`tartan memory "debugged"`, "(temporaries: 64 bytes)", "peak: 400 bytes", "updated in place: m, v, w"}, nil},
		{"timing", []string{`tartan compile "debugged"`, "simplify", "schedule", "total"}, nil},
		{"cache, Timing ,unknown", []string{"total"}, []string{"tartan memory"}},
		{"all", []string{"tartan schedule", "tartan memory", "kernel k3", "total"}, nil},
	}
	for _, c := range cases {
		buf.Reset()
		t.Setenv("TARTAN_DEBUG", c.env)
		if _, err := Compile(g, testTarget); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("TARTAN_DEBUG=%q: output lacks %q:\n%s", c.env, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("TARTAN_DEBUG=%q: output has %q:\n%s", c.env, w, out)
			}
		}
	}
}
