#!/usr/bin/python3
"""Runs eval_onnx.py's evaluator on ONNX's own node tests.

    eval_node_tests.py NODE_DIR TEST...

For each TEST (a directory of NODE_DIR, such as test_lstm_defaults, with
model.onnx and test_data_set_*/input_K.pb, output_K.pb) it evaluates the
model on every data set's inputs and compares every output with ONNX's
expected one: floats within 1e-6 + 1e-4·|expected|, other types exactly.
It prints one line per test and exits with status 1 if any disagrees, so
that the operators the exporter's tests rely on are checked against
ONNX's published outputs as well as against PyTorch.
"""
import glob
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_onnx  # noqa: E402


def numbered(d, what):
    paths = []
    while os.path.exists(os.path.join(d, "%s_%d.pb" % (what, len(paths)))):
        paths.append(os.path.join(d, "%s_%d.pb" % (what, len(paths))))
    return [numpy_helper.to_array(onnx.load_tensor(p)) for p in paths]


def check(d):
    model = onnx.load(os.path.join(d, "model.onnx"))
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    if not sets:
        return False, "no data sets"
    worst = 0.0
    for s in sets:
        with torch.no_grad():
            got = eval_onnx.evaluate(model, numbered(s, "input"))
        want = numbered(s, "output")
        if len(got) != len(want):
            return False, "%s: %d outputs, %d expected" % (os.path.basename(s), len(got), len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            g = g.numpy()
            if g.shape != w.shape:
                return False, "output %d has shape %s, want %s" % (k, g.shape, w.shape)
            if np.issubdtype(w.dtype, np.floating):
                err = np.abs(g.astype(np.float64) - w.astype(np.float64))
                if not np.all(err <= 1e-6 + 1e-4 * np.abs(w)):
                    return False, "output %d: max |diff| %.3g" % (k, err.max())
                worst = max(worst, float(err.max(initial=0)))
            elif not np.array_equal(g.astype(w.dtype), w):
                return False, "output %d differs: %s, want %s" % (k, g.tolist(), w.tolist())
    return True, "%d data sets, max |diff| %.3g" % (len(sets), worst)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: eval_node_tests.py NODE_DIR TEST...")
    bad = 0
    for name in sys.argv[2:]:
        try:
            ok, msg = check(os.path.join(sys.argv[1], name))
        except Exception as e:  # an operator the evaluator lacks, say
            ok, msg = False, "%s: %s" % (type(e).__name__, e)
        print("%s %s: %s" % ("ok  " if ok else "FAIL", name, msg))
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
