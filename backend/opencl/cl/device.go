package cl

import (
	"fmt"
	"slices"
	"strings"
)

// DeviceType is the cl_device_type bitfield.
type DeviceType uint64

// Device types.
const (
	DeviceTypeDefault     DeviceType = 1 << 0
	DeviceTypeCPU         DeviceType = 1 << 1
	DeviceTypeGPU         DeviceType = 1 << 2
	DeviceTypeAccelerator DeviceType = 1 << 3
	DeviceTypeCustom      DeviceType = 1 << 4
)

// String names the set bits, such as "GPU" or "CPU|DEFAULT".
func (t DeviceType) String() string {
	var parts []string
	for _, b := range []struct {
		bit  DeviceType
		name string
	}{
		{DeviceTypeCPU, "CPU"}, {DeviceTypeGPU, "GPU"}, {DeviceTypeAccelerator, "ACCELERATOR"},
		{DeviceTypeCustom, "CUSTOM"}, {DeviceTypeDefault, "DEFAULT"},
	} {
		if t&b.bit != 0 {
			parts = append(parts, b.name)
			t &^= b.bit
		}
	}
	if t != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint64(t)))
	}
	if len(parts) == 0 {
		return "NONE"
	}
	return strings.Join(parts, "|")
}

// DeviceInfo is what a backend needs to know about a device, read once when
// the device is listed. Sizes are in bytes.
type DeviceInfo struct {
	Name           string
	Vendor         string
	VendorID       uint32
	Version        string // "OpenCL <major>.<minor> …"
	DriverVersion  string
	OpenCLCVersion string // "OpenCL C <major>.<minor> …"
	Profile        string
	Type           DeviceType

	MaxComputeUnits           int
	MaxClockMHz               int
	MaxWorkGroupSize          int
	MaxWorkItemSizes          []int // one entry per dimension
	LocalMemSize              uint64
	GlobalMemSize             uint64
	MaxMemAllocSize           uint64
	PreferredVectorWidthFloat int
	AddressBits               int
	Available                 bool
	CompilerAvailable         bool
	Extensions                []string
}

// HasExtension reports whether the device lists the named extension.
func (i *DeviceInfo) HasExtension(name string) bool { return slices.Contains(i.Extensions, name) }

// Device is one OpenCL device of a platform.
type Device struct {
	platform *Platform
	id       uintptr
	index    int
	info     DeviceInfo
}

// newDevice reads every DeviceInfo field of a device.
func newDevice(p *Platform, id uintptr, index int) (*Device, error) {
	d := &Device{platform: p, id: id, index: index}
	t := p.t
	str := func(param uint32, dst *string) error {
		s, err := infoString(t, fnGetDeviceInfo, id, param)
		*dst = s
		return err
	}
	num := func(param uint32) (uint64, error) { return infoUint(t, fnGetDeviceInfo, id, param) }
	i := &d.info
	var ext string
	for _, f := range []struct {
		param uint32
		dst   *string
	}{
		{deviceName, &i.Name}, {deviceVendor, &i.Vendor}, {deviceVersion, &i.Version},
		{driverVersion, &i.DriverVersion}, {deviceOpenCLCVersion, &i.OpenCLCVersion},
		{deviceProfile, &i.Profile}, {deviceExtensions, &ext},
	} {
		if err := str(f.param, f.dst); err != nil {
			return nil, annotate(err, "device %d of platform %q", index, p.Name)
		}
	}
	i.Extensions = strings.Fields(ext)
	for _, f := range []struct {
		param uint32
		set   func(uint64)
	}{
		{deviceType, func(v uint64) { i.Type = DeviceType(v) }},
		{deviceVendorID, func(v uint64) { i.VendorID = uint32(v) }},
		{deviceMaxComputeUnits, func(v uint64) { i.MaxComputeUnits = int(v) }},
		{deviceMaxClockFrequency, func(v uint64) { i.MaxClockMHz = int(v) }},
		{deviceMaxWorkGroupSize, func(v uint64) { i.MaxWorkGroupSize = int(v) }},
		{deviceLocalMemSize, func(v uint64) { i.LocalMemSize = v }},
		{deviceGlobalMemSize, func(v uint64) { i.GlobalMemSize = v }},
		{deviceMaxMemAllocSize, func(v uint64) { i.MaxMemAllocSize = v }},
		{devicePreferredVectorWidthFloat, func(v uint64) { i.PreferredVectorWidthFloat = int(v) }},
		{deviceAddressBits, func(v uint64) { i.AddressBits = int(v) }},
		{deviceAvailable, func(v uint64) { i.Available = v != 0 }},
		{deviceCompilerAvailable, func(v uint64) { i.CompilerAvailable = v != 0 }},
	} {
		v, err := num(f.param)
		if err != nil {
			return nil, annotate(err, "device %q", i.Name)
		}
		f.set(v)
	}
	sizes, err := infoSizes(t, fnGetDeviceInfo, id, deviceMaxWorkItemSizes)
	if err != nil {
		return nil, annotate(err, "device %q", i.Name)
	}
	i.MaxWorkItemSizes = sizes
	return d, nil
}

// Info returns the device's properties. The returned value shares the
// MaxWorkItemSizes and Extensions slices with the device; do not modify them.
func (d *Device) Info() DeviceInfo { return d.info }

// Name returns the device name.
func (d *Device) Name() string { return d.info.Name }

// Platform returns the platform the device belongs to.
func (d *Device) Platform() *Platform { return d.platform }

// Index returns the device's position in its platform's device list.
func (d *Device) Index() int { return d.index }

// String returns the device and platform names.
func (d *Device) String() string { return fmt.Sprintf("%s (%s)", d.info.Name, d.platform.Name) }
