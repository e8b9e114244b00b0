package spirv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
)

// full is a device with every optional feature, like lavapipe.
var full = Target{MaxWorkGroupSize: 1024, MaxGroupCount: [3]int{65535, 65535, 65535}, SubgroupSize: 8, Int64: true, Float64: true}

// tool returns the path of a SPIRV-Tools program, or skips the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian package spirv-tools): %v", name, err)
	}
	return path
}

func binaryOf(words []uint32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, words)
	return b.Bytes()
}

// validate runs spirv-val for Vulkan 1.1 on the module.
func validate(val, dir, name string, words []uint32) error {
	path := filepath.Join(dir, name+".spv")
	if err := os.WriteFile(path, binaryOf(words), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(val, "--target-env", "vulkan1.1", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("spirv-val: %v: %s", err, out)
	}
	return nil
}

// conformancePrograms compiles the graph of every conformance case for the
// Vulkan backend.
func conformancePrograms(t *testing.T) map[string]*kir.Program {
	progs := map[string]*kir.Program{}
	for _, c := range conformance.Cases() {
		b, err := conformance.Prepare(c, conformance.Seed(c))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		p, err := compile.Compile(b.G, compile.Target{Backend: "vulkan", ComputeUnits: 8, MaxWorkGroup: 1024})
		if err != nil {
			t.Fatalf("%s: compile: %v", c.Name, err)
		}
		progs[c.Name] = p
	}
	return progs
}

// TestConformanceKernelsValidate emits every kernel of every conformance
// case's program and checks each module with spirv-val.
func TestConformanceKernelsValidate(t *testing.T) {
	val := tool(t, "spirv-val")
	dir := t.TempDir()
	n := 0
	for name, p := range conformancePrograms(t) {
		for i := range p.Kernels {
			k, err := Emit(p, i, full)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			n++
			file := fmt.Sprintf("%s_%d", strings.ReplaceAll(name, "/", "_"), i)
			if err := validate(val, dir, file, k.Words); err != nil {
				t.Errorf("%s kernel %d (%s): %v\n%s", name, i, p.Kernels[i].Name, err, p.Kernels[i])
			}
		}
	}
	t.Logf("%d kernels emitted and validated", n)
}
