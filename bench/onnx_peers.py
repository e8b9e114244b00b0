#!/usr/bin/python3
"""Inference latency of the ONNX test models in the peers, for comparison
with `tartan bench --onnx` in the same call.

    onnx_peers.py --models DIR [--batch 1,64] [--torch cpu|cuda] [--ort]
                  [--threads N] [--runs R]

DIR holds the models export_models.py writes (resnet18.onnx,
mobilenet_v2.onnx). --torch times PyTorch eager on the given device (on
CUDA with TF32 off, as Tartan's float32 default) using the same model
definitions and weights; --ort times onnxruntime's CPU provider on the
exported file with --threads intra-op threads. Each timing is the median of
--runs runs after warm-up, in milliseconds; one line per model, peer and
batch, and a JSON list on the last line.
"""
import argparse
import importlib.util
import json
import os
import statistics
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def export_module():
    path = os.path.join(HERE, "..", "onnx", "testdata", "torch", "export_models.py")
    spec = importlib.util.spec_from_file_location("export_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def median_ms(f, runs, sync=lambda: None):
    for _ in range(3):
        f()
    sync()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True)
    ap.add_argument("--batch", default="1,64")
    ap.add_argument("--torch", choices=["cpu", "cuda"])
    ap.add_argument("--ort", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--names", default="resnet18,mobilenet_v2")
    a = ap.parse_args()
    batches = [int(b) for b in a.batch.split(",")]
    names = a.names.split(",")
    rows = []
    if a.torch:
        if a.torch == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        if a.threads:
            torch.set_num_threads(a.threads)
        dev = torch.device(a.torch)
        sync = torch.cuda.synchronize if a.torch == "cuda" else (lambda: None)
        for name, m, x in export_module().models():
            if name not in names:
                continue
            m = m.to(dev).eval()
            for b in batches:
                xb = torch.randn(b, *x.shape[1:], device=dev)
                with torch.no_grad():
                    ms = median_ms(lambda: m(xb), a.runs, sync)
                rows.append({"model": name, "peer": "torch-" + a.torch, "batch": b, "ms": ms})
                print("%-14s %-12s batch %3d  %9.3f ms" % (name, "torch-" + a.torch, b, ms), flush=True)
    if a.ort:
        import onnxruntime as ort
        so = ort.SessionOptions()
        if a.threads:
            so.intra_op_num_threads = a.threads
            so.inter_op_num_threads = 1
        for name in names:
            sess = ort.InferenceSession(os.path.join(a.models, name + ".onnx"), so, providers=["CPUExecutionProvider"])
            inp = sess.get_inputs()[0]
            for b in batches:
                shape = [b] + [int(d) for d in inp.shape[1:]]
                xb = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
                ms = median_ms(lambda: sess.run(None, {inp.name: xb}), a.runs)
                rows.append({"model": name, "peer": "ort-cpu", "batch": b, "threads": a.threads, "ms": ms})
                print("%-14s %-12s batch %3d  %9.3f ms" % (name, "ort-cpu", b, ms), flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
