package cl

import (
	"fmt"
	"sync"
	"unsafe"
)

// Platform is one OpenCL platform (an implementation from one vendor). The
// string fields are read once when the platform is found. All calls for the
// platform and for every object created from it go through its own function
// table, filled from the library's exported symbols or from the vendor's ICD
// dispatch table; nothing else in the package depends on which.
type Platform struct {
	t  *fnTable
	id uintptr

	// Name, Vendor, Version ("OpenCL <major>.<minor> <vendor-specific>"),
	// Profile ("FULL_PROFILE" or "EMBEDDED_PROFILE") and Extensions (space
	// separated) are the platform's info strings.
	Name, Vendor, Version, Profile, Extensions string

	devOnce sync.Once
	devices []*Device
	devErr  error
}

// newPlatform reads the info strings of a platform.
func newPlatform(t *fnTable, id uintptr) (*Platform, error) {
	p := &Platform{t: t, id: id}
	for _, f := range []struct {
		param uint32
		dst   *string
	}{
		{platformName, &p.Name},
		{platformVendor, &p.Vendor},
		{platformVersion, &p.Version},
		{platformProfile, &p.Profile},
		{platformExtensions, &p.Extensions},
	} {
		s, err := platformString(t, id, f.param)
		if err != nil {
			return nil, err
		}
		*f.dst = s
	}
	return p, nil
}

// Library returns the file the platform was reached through: the ICD loader
// (or runtime) that lists it, or the vendor library loaded directly.
func (p *Platform) Library() string { return p.t.library }

// Mode returns how the platform's entry points were found: ModeExports,
// ModeDispatch or ModeICD2.
func (p *Platform) Mode() string { return p.t.mode }

// OpenCLVersion returns the major and minor platform version parsed from
// Version (1.0 when it does not parse).
func (p *Platform) OpenCLVersion() (major, minor int) { return p.t.version / 10, p.t.version % 10 }

// String returns the platform name, version and origin.
func (p *Platform) String() string {
	return fmt.Sprintf("%s (%s; %s via %s)", p.Name, p.Version, p.t.library, p.t.mode)
}

// sameAs reports whether two platforms are the same implementation seen
// twice, such as a vendor library found by the loader and again directly:
// the same object, or the same name, vendor and version.
func (p *Platform) sameAs(q *Platform) bool {
	return p.id == q.id || (p.Name == q.Name && p.Vendor == q.Vendor && p.Version == q.Version)
}

// Devices lists every device of the platform (any type), with its info. The
// list is read once and cached; a platform without devices yields an empty
// list.
func (p *Platform) Devices() ([]*Device, error) {
	p.devOnce.Do(func() { p.devices, p.devErr = p.listDevices() })
	return p.devices, p.devErr
}

func (p *Platform) listDevices() ([]*Device, error) {
	const all = uintptr(0xFFFFFFFF) // CL_DEVICE_TYPE_ALL
	var n uint32
	err := p.t.status(fnGetDeviceIDs, p.id, all, 0, 0, uintptr(unsafe.Pointer(&n)))
	if IsCode(err, DeviceNotFound) || (err == nil && n == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, annotate(err, "counting devices of platform %q", p.Name)
	}
	ids := make([]uintptr, n)
	if err := p.t.status(fnGetDeviceIDs, p.id, all, uintptr(n), uintptr(unsafe.Pointer(&ids[0])), uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, annotate(err, "listing devices of platform %q", p.Name)
	}
	ids = ids[:min(int(n), len(ids))]
	out := make([]*Device, 0, len(ids))
	for i, id := range ids {
		d, err := newDevice(p, id, i)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
