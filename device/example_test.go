package device_test

import (
	"fmt"
	"os"

	"github.com/tartanml/tartan/device"
	"github.com/tartanml/tartan/nn"
)

// Select is how a program gets its device: the flag's value when given (as
// here, "cpu"), else $TARTAN_DEVICE, else the device saved by `tartan setup`,
// else the best one available. nn takes the device through Compile's OnDevice
// option.
func ExampleSelect() {
	dev, sel, err := device.Select("cpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	fmt.Println(sel)
	fmt.Println("backend:", dev.Info().Backend)

	model, err := nn.Sequential("m", nn.Input(4), nn.Dense(3, nn.Activation("softmax")))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = model.Compile(nn.Adam(1e-3), nn.SparseCategoricalCrossentropy(), nn.OnDevice(dev))
	fmt.Println("compiled:", err == nil, "on", model.Device().Info().ID)
	// Output:
	// device cpu (from --device flag)
	// backend: cpu
	// compiled: true on cpu
}

// The usual call passes the --device flag's value, empty when the flag was
// not given, and reports a Selection's warning (set when the configured
// device is missing and the CPU was taken instead).
func ExampleSelect_flag() {
	dev, sel, err := device.Select("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer dev.Close()
	if sel.Warning != "" {
		fmt.Fprintln(os.Stderr, "warning:", sel.Warning)
	}
	fmt.Println("running on", dev.Info().Name, "-", sel)
}

// List finds every device; Tartan's CPU backend is always among them, and
// exactly one entry is recommended. What else appears depends on the
// machine's OpenCL drivers, so this prints only what holds everywhere.
func ExampleList() {
	l := device.List()
	_, hasCPU := l.Find("cpu")
	recommended := 0
	for _, e := range l.Devices {
		if e.Recommended {
			recommended++
		}
	}
	fmt.Println("cpu listed:", hasCPU)
	fmt.Println("recommended entries:", recommended)
	fmt.Println("recommended is listed:", l.Recommended().ID != "")
	// device.FormatTable(os.Stdout, l) would print the table that
	// `tartan devices` shows.

	// Output:
	// cpu listed: true
	// recommended entries: 1
	// recommended is listed: true
}

// The config file `tartan setup` writes, read back. Its path follows
// $XDG_CONFIG_HOME (by default ~/.config/tartan/config.json).
func ExampleConfigPath() {
	dir, err := os.MkdirTemp("", "tartan-config")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	old, had := os.LookupEnv("XDG_CONFIG_HOME")
	os.Setenv("XDG_CONFIG_HOME", dir)
	defer func() {
		if had {
			os.Setenv("XDG_CONFIG_HOME", old)
		} else {
			os.Unsetenv("XDG_CONFIG_HOME")
		}
	}()

	path, _ := device.ConfigPath()
	fmt.Println(path == dir+"/tartan/config.json")
	if _, err := device.SaveConfig(device.Config{Device: "cpu"}); err != nil {
		fmt.Println(err)
		return
	}
	c, err := device.LoadConfig()
	fmt.Println(c.Device, err)
	// Output:
	// true
	// cpu <nil>
}
