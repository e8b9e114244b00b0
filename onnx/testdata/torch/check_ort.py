#!/usr/bin/python3
"""Runs ONNX models with onnxruntime and compares their outputs with
expected ones.

    check_ort.py MODEL.onnx --input X.npy [--input ...] --expected Y.npy [--expected ...]
    check_ort.py --dir DIR

The first form feeds the inputs in the graph's input order and compares
output k with the k-th expected array. The second checks every NAME.onnx
in DIR that has NAME_input.npy and NAME_output.npy beside it (what
export_models.py and the Go test TestExportForRuntime write), or, for a
model of several inputs or outputs, NAME_input_0.npy, NAME_input_1.npy, …
and NAME_output_0.npy, NAME_output_1.npy, … in the graph's orders. Outputs
agree when |got - want| <= atol + rtol·|want| elementwise (rtol 1e-4,
atol 1e-5 unless --rtol and --atol say otherwise).
It runs on onnxruntime's CPU provider unless --cuda is given (then on CUDA
with TF32 off, so that float32 products stay within the tolerance). It
prints one line per model and exits with status 1 if any disagrees.

To check Tartan's ONNX export (onnx.Export) of every nn layer kind, every
activation and the larger test models, from the repository root:

    TARTAN_ONNX_EXPORT_DIR=/tmp/tartan-export go test ./onnx -run TestExportForRuntime -count=1
    python3 onnx/testdata/torch/check_ort.py --dir /tmp/tartan-export

TestExportForRuntime writes NAME.onnx, NAME_input.npy and NAME_output.npy
(the nn model's own prediction) for each model; it needs no Python.
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnxruntime as ort


def check(model, inputs, expected, rtol, atol, providers):
    sess = ort.InferenceSession(model, providers=providers)
    names = [i.name for i in sess.get_inputs()]
    if len(names) != len(inputs):
        return False, "the model has %d inputs, %d given" % (len(names), len(inputs))
    outs = sess.run(None, {n: np.load(p) for n, p in zip(names, inputs)})
    if len(outs) != len(expected):
        return False, "the model has %d outputs, %d expected" % (len(outs), len(expected))
    worst = []
    ok = True
    for k, (got, path) in enumerate(zip(outs, expected)):
        want = np.load(path)
        if got.shape != want.shape:
            return False, "output %d has shape %s, want %s" % (k, got.shape, want.shape)
        err = np.abs(got.astype(np.float64) - want)
        bound = atol + rtol * np.abs(want)
        worst.append("output %d: max |diff| %.3g, max |diff|/bound %.3g" % (k, err.max(initial=0), (err / bound).max(initial=0)))
        ok = ok and bool(np.all(err <= bound))
    return ok, "; ".join(worst)


def numbered(base, what):
    """BASE_WHAT_0.npy, BASE_WHAT_1.npy, … as far as they exist."""
    paths = []
    while os.path.exists("%s_%s_%d.npy" % (base, what, len(paths))):
        paths.append("%s_%s_%d.npy" % (base, what, len(paths)))
    return paths


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", nargs="?")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--expected", action="append", default=[])
    p.add_argument("--dir")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--cuda", action="store_true",
                   help="run on CUDAExecutionProvider (TF32 off) instead of the CPU")
    a = p.parse_args()
    jobs = []
    if a.dir:
        for m in sorted(glob.glob(os.path.join(a.dir, "*.onnx"))):
            base = m[:-len(".onnx")]
            if os.path.exists(base + "_input.npy") and os.path.exists(base + "_output.npy"):
                jobs.append((m, [base + "_input.npy"], [base + "_output.npy"]))
                continue
            ins, outs = numbered(base, "input"), numbered(base, "output")
            if ins and outs:
                jobs.append((m, ins, outs))
    elif a.model:
        jobs.append((a.model, a.input, a.expected))
    else:
        p.error("give a model or --dir")
    if not jobs:
        sys.exit("no models to check")
    providers = ["CPUExecutionProvider"]
    if a.cuda:
        providers = [("CUDAExecutionProvider", {"use_tf32": 0}), "CPUExecutionProvider"]
    bad = 0
    print("onnxruntime", ort.__version__, "providers", providers)
    for m, ins, exp in jobs:
        ok, msg = check(m, ins, exp, a.rtol, a.atol, providers)
        print("%s %s: %s" % ("ok  " if ok else "FAIL", m, msg))
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
