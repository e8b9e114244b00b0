// Package npy reads and writes NumPy's array files: .npy (one array) and
// .npz (a zip archive of .npy files, stored or deflated).
//
// An Array holds a dtype, a shape (outermost first; empty for a 0-d array)
// and its elements in C (row-major) order as a typed slice: []bool, []int8,
// []int16, []int32, []int64, []uint8, []uint16, []uint32, []uint64,
// []Half, []float32 or []float64, matching its DType.
//
// Reading accepts format versions 1.0, 2.0 and 3.0, the dtypes |b1, i1, i2,
// i4, i8, u1, u2, u4, u8, f2, f4 and f8 in either byte order ('<', '>', or
// '|' for one-byte types), C order and Fortran order (transposed into C
// order on reading), 0-d and empty arrays. Structured and object dtypes are
// refused. Writing produces little-endian C-order files of version 1.0, or
// 2.0 when the header does not fit 1.0's 65535 bytes, as numpy.save does.
//
// Hostile files give errors, never panics: headers longer than MaxHeaderBytes,
// shapes whose element count or byte size overflows, data shorter than the
// shape says. Read grows its buffer as data arrives, so a header claiming a
// huge array costs only the bytes actually present. An NPZ member is
// decompressed only up to the size its .npy header implies, which must agree
// with the size the archive declares and stay within NPZ.MaxBytes, so an
// archive cannot expand into more memory than that bound (a zip bomb).
//
// ToValue and FromValue convert to and from tile.Value. For nn's float32
// host arrays, nn.NewArray(a.AsFloat32(), a.Shape...) and
// npy.New(x.Shape, x.Data) convert without a dependency of npy on nn, so
// that nn may read NumPy files itself.
package npy
