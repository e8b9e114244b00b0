package cl

import (
	"encoding/binary"
	"slices"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"OpenCL 3.0 PoCL 3.1+debian  Linux", 30},
		{"OpenCL 1.2 CUDA 12.4.0", 12},
		{"OpenCL 2.1 AMD-APP (3590.0)", 21},
		{"OpenCL 1.1", 11},
		{"OpenCL C 1.2", 10}, // a C-language version string is not a platform version
		{"", 10},
		{"garbage", 10},
		{"OpenCL x.y", 10},
	} {
		if got := parseVersion(c.in); got != c.want {
			t.Errorf("parseVersion(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestDecoders(t *testing.T) {
	b := make([]byte, 24)
	binary.NativeEndian.PutUint64(b, 1024)
	binary.NativeEndian.PutUint64(b[8:], 7)
	binary.NativeEndian.PutUint64(b[16:], 1)
	if got := decodeSizes(b); !slices.Equal(got, []int{1024, 7, 1}) {
		t.Errorf("decodeSizes = %v", got)
	}
	if v, err := decodeUint(b[:4], "op", 1); err != nil || v != 1024 {
		t.Errorf("decodeUint 4 bytes = %d, %v", v, err)
	}
	if v, err := decodeUint(b[8:16], "op", 1); err != nil || v != 7 {
		t.Errorf("decodeUint 8 bytes = %d, %v", v, err)
	}
	if _, err := decodeUint(b[:3], "op", 1); err == nil {
		t.Error("decodeUint accepted 3 bytes")
	}
	if s := cStringFrom([]byte("abc\x00def")); s != "abc" {
		t.Errorf("cStringFrom = %q", s)
	}
}

func TestDeviceTypeString(t *testing.T) {
	for _, c := range []struct {
		t    DeviceType
		want string
	}{
		{DeviceTypeGPU, "GPU"},
		{DeviceTypeCPU | DeviceTypeDefault, "CPU|DEFAULT"},
		{0, "NONE"},
		{DeviceTypeAccelerator | 1<<10, "ACCELERATOR|0x400"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("%#x.String() = %q, want %q", uint64(c.t), got, c.want)
		}
	}
}
