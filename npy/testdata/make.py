#!/usr/bin/python3
"""Golden files of package npy, and the reader of its round-trip test.

    make.py write DIR   writes the golden .npy/.npz files into DIR and, in
                        DIR/expected.txt, every array's values as text
    make.py dump DIR    prints that text for every .npy/.npz file in DIR

The text has one line per array:

    NAME DTYPE SHAPE V1 V2 ...

NAME is the file name, with ":member" for an .npz member; DTYPE is NumPy's
name (float32, int8, ...); SHAPE is the dimensions joined by "x" ("-" for a
0-d array); the values follow in C order: integers in decimal, booleans as 0
or 1, floats as float.hex (exact; nan, inf, -inf).
"""
import os
import sys

import numpy as np
from numpy.lib import format as npformat


def text(name, a):
    shape = "x".join(str(d) for d in a.shape) if a.ndim else "-"
    flat = a.ravel(order="C")
    if a.dtype.kind == "f":
        vals = [float(v).hex() for v in flat]
    elif a.dtype.kind == "b":
        vals = ["1" if v else "0" for v in flat]
    else:
        vals = [str(int(v)) for v in flat]
    return " ".join([name, a.dtype.name, shape] + vals)


def golden():
    """The golden arrays: name -> (array, format version)."""
    rng = np.random.default_rng(7)
    out = {}
    ints = np.array([[0, 1, -1], [7, -8, 5]])
    out["bool.npy"] = (np.array([[True, False, True], [False, False, True]]), (1, 0))
    for dt in ["i1", "i2", "i4", "i8"]:
        info = np.iinfo(dt)
        v = np.array([info.min, -1, 0, 1, 42, info.max], dtype=dt).reshape(2, 3)
        out["int%d.npy" % (8 * int(dt[1]))] = (v, (1, 0))
    for dt in ["u1", "u2", "u4", "u8"]:
        info = np.iinfo(dt)
        v = np.array([0, 1, 2, 200, info.max - 1, info.max], dtype=dt).reshape(3, 2)
        out["uint%d.npy" % (8 * int(dt[1]))] = (v, (1, 0))
    for dt in ["f2", "f4", "f8"]:
        v = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-3, 3.0e4 if dt == "f2" else 1e30,
                      np.finfo(dt).tiny, np.finfo(dt).smallest_subnormal, np.finfo(dt).max], dtype=dt).reshape(3, 4)
        out["float%d.npy" % (8 * int(dt[1]))] = (v, (1, 0))
    # Big-endian variants of every multi-byte type.
    for dt in ["i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8"]:
        v = (ints.astype(dt) if dt[0] != "u" else np.abs(ints).astype(dt)) * 3
        out["be_%s.npy" % dt] = (v.astype(">" + dt), (1, 0))
    # Fortran order, 2-D and 3-D, and a big-endian Fortran array.
    out["fortran2d.npy"] = (np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4)), (1, 0))
    out["fortran3d.npy"] = (np.asfortranarray(np.arange(24, dtype="<i4").reshape(2, 3, 4)), (1, 0))
    out["fortran_be.npy"] = (np.asfortranarray(rng.standard_normal((4, 3)).astype(">f8")), (1, 0))
    # The format versions.
    v = rng.standard_normal((2, 5)).astype("<f4")
    out["v1.npy"] = (v, (1, 0))
    out["v2.npy"] = (v, (2, 0))
    out["v3.npy"] = (v, (3, 0))
    # 0-d and empty arrays.
    out["scalar.npy"] = (np.array(3.5, dtype="<f8"), (1, 0))
    out["scalar_i8.npy"] = (np.array(-9, dtype="<i8"), (1, 0))
    out["empty.npy"] = (np.zeros((0, 3), dtype="<f4"), (1, 0))
    out["empty1d.npy"] = (np.zeros((0,), dtype="<i8"), (1, 0))
    out["vector.npy"] = (np.arange(5, dtype="<i2"), (1, 0))
    return out


def write(d):
    os.makedirs(d, exist_ok=True)
    lines = []
    for name, (a, version) in golden().items():
        with open(os.path.join(d, name), "wb") as f:
            npformat.write_array(f, a, version=version)
        lines.append(text(name, a))
    rng = np.random.default_rng(11)
    members = {
        "weights": rng.standard_normal((3, 4)).astype("<f4"),
        "labels": np.array([3, 1, 4, 1, 5], dtype="<i8"),
        "mask": np.array([True, False]),
        "zeros": np.zeros((16, 16), dtype="<f4"),
    }
    np.savez(os.path.join(d, "stored.npz"), **members)
    np.savez_compressed(os.path.join(d, "deflated.npz"), **members)
    for npz in ["stored.npz", "deflated.npz"]:
        for k, a in members.items():
            lines.append(text(npz + ":" + k, a))
    # NumPy's float32 -> float16 rounding, for the Go conversion: normal,
    # subnormal, tied, overflowing and special values.
    f32 = np.concatenate([
        rng.standard_normal(200).astype("<f4") * np.float32(1000),
        rng.standard_normal(100).astype("<f4") * np.float32(1e-5),
        np.array([65504, 65519.99, 65520, 1e6, -1e6, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 2.0**-26,
                  1 + 2.0**-11, 1 + 3 * 2.0**-11, 6.1e-5, 0.0, -0.0, np.inf, -np.inf, np.nan], dtype="<f4"),
    ])
    with np.errstate(over="ignore"):
        f16 = f32.astype("<f2")
    np.savez(os.path.join(d, "halfround.npz"), f32=f32, f16=f16)
    lines.append(text("halfround.npz:f32", f32))
    lines.append(text("halfround.npz:f16", f16))
    with open(os.path.join(d, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def dump(d):
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if name.endswith(".npy"):
            print(text(name, np.load(p)))
        elif name.endswith(".npz"):
            with np.load(p) as z:
                for k in z.files:
                    print(text(name + ":" + k, z[k]))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "dump"):
        sys.exit("usage: make.py write|dump DIR")
    (write if sys.argv[1] == "write" else dump)(sys.argv[2])
