package vulkan

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestPipelineCacheFile: closing a device that built pipelines saves the
// driver's pipeline cache; the next device opened reads it back; a damaged
// file is reported once, removed and not given to the driver.
func TestPipelineCacheFile(t *testing.T) {
	dir := t.TempDir()
	run := func() *Device {
		d := openTest(t, WithCacheDir(dir))
		e, err := d.load(affineProgram(100), testEmitter(t))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, 100)
		x[7] = 3
		e.SetInput("x", x)
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, 100)
		if err := e.ReadOutput("y", y); err != nil || y[7] != 7 || y[0] != 1 {
			t.Fatalf("y[7] = %v, y[0] = %v, %v", y[7], y[0], err)
		}
		e.Close()
		return d
	}
	d := run()
	pd := d.PhysicalDevice()
	path := d.cachePath
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, dir) {
		t.Fatalf("cache path %q", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := checkPipeData(b, pd)
	if err != nil || len(data) < 32 {
		t.Fatalf("saved file: %v (%d bytes)", err, len(b))
	}
	if got := readPipeData(path, pd); !bytes.Equal(got, data) {
		t.Fatal("reading the file back gives other data")
	}
	d2 := run() // primed from the file
	d2.Close()

	var warnings bytes.Buffer
	warnOut = &warnings
	defer func() { warnOut = os.Stderr }()
	for _, damage := range []struct {
		name string
		edit func([]byte)
	}{
		{"a flipped byte", func(b []byte) { b[len(b)-1] ^= 0xff }},
		{"a truncation", nil},
	} {
		b, _ := os.ReadFile(path)
		if damage.edit != nil {
			damage.edit(b)
		} else {
			b = b[:pipeHeader+10]
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		delete(warned, path)
		run().Close()
		if !strings.Contains(warnings.String(), path+" is damaged") {
			t.Errorf("%s: warnings %q", damage.name, warnings.String())
		}
		warnings.Reset()
		// The run rebuilt and saved it again.
		if b, err := os.ReadFile(path); err != nil {
			t.Errorf("%s: %v", damage.name, err)
		} else if _, err := checkPipeData(b, pd); err != nil {
			t.Errorf("%s: the rewritten file: %v", damage.name, err)
		}
	}
	// Data of another device is refused by its header.
	other := *pd
	other.VendorID++
	if _, err := checkPipeData(b, &other); err == nil || !strings.Contains(err.Error(), "Vulkan header") {
		t.Errorf("another device's data: %v", err)
	}
	if p := pipePath("", pd); p != "" {
		t.Errorf("pipePath without a directory = %q", p)
	}
}
