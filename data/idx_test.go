package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadIDXValid(t *testing.T) {
	f32 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.BigEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	u8 := idxBytes(Uint8, []int{2, 2, 3}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255})
	i16 := idxBytes(Int16, []int{3}, []byte{0x00, 0x01, 0xff, 0xfe, 0x7f, 0xff})
	fl := idxBytes(Float32, []int{1, 2}, f32(1.5, -2))
	empty := idxBytes(Uint8, []int{0, 28, 28}, nil)
	twoMembers := append(gzipBytes(t, u8[:7]), gzipBytes(t, u8[7:])...)

	tests := []struct {
		name  string
		in    []byte
		typ   DType
		dims  []int
		data  []byte
		esize int
	}{
		{"uint8 3-d", u8, Uint8, []int{2, 2, 3}, u8[16:], 1},
		{"uint8 gzipped", gzipBytes(t, u8), Uint8, []int{2, 2, 3}, u8[16:], 1},
		{"gzip in two members", twoMembers, Uint8, []int{2, 2, 3}, u8[16:], 1},
		{"int16 big-endian", i16, Int16, []int{3}, []byte{0x00, 0x01, 0xff, 0xfe, 0x7f, 0xff}, 2},
		{"float32", fl, Float32, []int{1, 2}, []byte{0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0}, 4},
		{"no samples", empty, Uint8, []int{0, 28, 28}, []byte{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := ReadIDX(bytes.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if x.Type != tc.typ || !reflect.DeepEqual(x.Dims, tc.dims) || !bytes.Equal(x.Data, tc.data) {
				t.Fatalf("got %v %v % x, want %v %v % x", x.Type, x.Dims, x.Data, tc.typ, tc.dims, tc.data)
			}
			if x.Type.Size() != tc.esize {
				t.Fatalf("Size() = %d, want %d", x.Type.Size(), tc.esize)
			}
		})
	}
}

func TestReadIDXErrors(t *testing.T) {
	good := idxBytes(Uint8, []int{3, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	goodGz := gzipBytes(t, good)
	// Flip a bit of the stored CRC-32 (the 8-byte trailer's first 4 bytes).
	badCRC := bytes.Clone(goodGz)
	badCRC[len(badCRC)-8] ^= 0x01
	// A deflate block type of 3 is reserved, so the stream is corrupt.
	badDeflate := bytes.Clone(goodGz)
	badDeflate[10] = 0xff
	// A gzip header with an unknown compression method (9).
	badMethod := bytes.Clone(goodGz)
	badMethod[2] = 9

	tests := []struct {
		name string
		in   []byte
		want error
		msg  string // part of the message
	}{
		{"empty", nil, ErrTruncated, "empty"},
		{"three bytes", []byte{0, 0, 8}, ErrTruncated, "after 3 bytes"},
		{"text file", []byte("hello, world"), ErrBadMagic, "68 65"},
		{"first byte wrong", []byte{1, 0, 8, 1, 0, 0, 0, 0}, ErrBadMagic, "01 00"},
		{"unknown type", []byte{0, 0, 0x07, 1, 0, 0, 0, 0}, ErrBadMagic, "0x07"},
		{"zero dims", []byte{0, 0, 8, 0}, ErrBadMagic, "0 dimensions"},
		{"header cut in dims", good[:10], ErrTruncated, "6 of the 12 bytes"},
		{"payload short", good[:len(good)-1], ErrPayloadSize, "need 12 payload bytes, but only 11"},
		{"dims too large", idxBytes(Float64, []int{1 << 30, 1 << 30}, nil), ErrPayloadSize, "more than"},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0), ErrTrailingData, "3 bytes follow the 12-byte payload"},
		{"trailing bytes inside gzip", gzipBytes(t, append(bytes.Clone(good), 7)), ErrTrailingData, "after decompression"},
		{"garbage after gzip", append(bytes.Clone(goodGz), 'x', 'y'), ErrTrailingData, "2 bytes that are not gzip data"},
		{"gzip cut in stream", goodGz[:len(goodGz)-12], ErrTruncated, "gzip stream is cut off"},
		{"gzip cut in trailer", goodGz[:len(goodGz)-3], ErrTruncated, "gzip stream is cut off"},
		{"gzip cut in header", goodGz[:5], ErrTruncated, "gzip stream is cut off"},
		{"gzip cut to one byte", goodGz[:1], ErrTruncated, "gzip stream is cut off"},
		{"gzip bad crc", badCRC, ErrBadGzip, "checksum"},
		{"gzip bad deflate", badDeflate, ErrBadGzip, "corrupt"},
		{"gzip bad method", badMethod, ErrBadGzip, "invalid header"},
		{"short payload in gzip", gzipBytes(t, good[:len(good)-2]), ErrPayloadSize, "after decompression"},
	}
	sentinels := []error{ErrTruncated, ErrBadMagic, ErrPayloadSize, ErrTrailingData, ErrBadGzip}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadIDX(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want one wrapping %q", err, tc.want)
			}
			for _, s := range sentinels {
				if s != tc.want && errors.Is(err, s) {
					t.Errorf("error %v also wraps %q", err, s)
				}
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestReadIDXFile(t *testing.T) {
	dir := t.TempDir()
	good := idxBytes(Uint8, []int{2}, []byte{4, 5})
	plain := writeFile(t, dir, "plain-idx1-ubyte", good)
	gz := writeFile(t, dir, "packed-idx1-ubyte.gz", gzipBytes(t, good))
	bad := writeFile(t, dir, "bad-idx1-ubyte", good[:6])

	for _, p := range []string{plain, gz} {
		x, err := ReadIDXFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x.Data, []byte{4, 5}) {
			t.Fatalf("%s: data % x, want 04 05", p, x.Data)
		}
	}
	_, err := ReadIDXFile(bad)
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v should wrap ErrTruncated and name %s", err, bad)
	}
	missing := filepath.Join(dir, "absent")
	_, err = ReadIDXFile(missing)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %v should wrap os.ErrNotExist and name %s", err, missing)
	}
}

func TestDTypeNames(t *testing.T) {
	tests := []struct {
		t    DType
		name string
		size int
	}{
		{Uint8, "uint8", 1}, {Int8, "int8", 1}, {Int16, "int16", 2},
		{Int32, "int32", 4}, {Float32, "float32", 4}, {Float64, "float64", 8},
		{DType(0x42), "type 0x42", 0},
	}
	for _, tc := range tests {
		if tc.t.String() != tc.name || tc.t.Size() != tc.size {
			t.Errorf("DType 0x%02x: %q size %d, want %q size %d", byte(tc.t), tc.t.String(), tc.t.Size(), tc.name, tc.size)
		}
	}
}

func TestReadPayloadGrows(t *testing.T) {
	src := make([]byte, 23)
	for i := range src {
		src[i] = byte(i + 1)
	}
	tests := []struct {
		name string
		in   int   // bytes available
		need int64 // bytes asked for
		step int64
		err  error
	}{
		{"all at once", 23, 23, 64, nil},
		{"in growing steps", 23, 23, 5, nil},
		{"one byte steps", 23, 23, 1, nil},
		{"source ends early", 17, 23, 4, io.EOF},
		{"nothing asked", 23, 0, 4, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readPayload(bytes.NewReader(src[:tc.in]), tc.need, tc.step)
			if err != tc.err {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			want := src[:min(int64(tc.in), tc.need)]
			if !bytes.Equal(got, want) {
				t.Fatalf("read % x, want % x", got, want)
			}
		})
	}
}
