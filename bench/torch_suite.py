#!/usr/bin/env python3
"""Tartan's benchmark suite in PyTorch: the same models, sizes, losses and
Adam as `tartan bench --suite` (package bench), one training step each.

Every entry is timed as Tartan's are: a warm-up (the first step's time is
reported as compile_seconds, PyTorch having no compile step), then at most
--steps timed steps, ending once they have taken --max-seconds (at least one
is timed); ms/step is their median. Each step zeroes the gradients, runs the
forward pass and the loss, backward, Adam's step and reads the loss (which
waits for the device). The models bind their batch from host memory every
step (a copy to the GPU on CUDA, nothing on the CPU), as Tartan's Fit does;
the fragments keep their inputs on the device.

Layouts are PyTorch's own (NCHW); Tartan's are channels-last. Where Tartan
pads `same` asymmetrically (a stride-2 3x3 window on an even size pads one
row at the end only), PyTorch pads one row on each side: the output sizes
and the work are the same.

    python3 bench/torch_suite.py [--device cpu|cuda] [--threads N]
        [--only NAME,...] [--fragments] [--tf32 on|off|default]
        [--steps N] [--max-seconds S] [--warmup N] [--batch N]
        [--json FILE] [--params-only]

Runs on PyTorch 1.13 (Debian's) and 2.x.
"""

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ADAM = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-7)


def bn(c):
    # Keras's defaults, as Tartan's BatchNormalization: momentum 0.99
    # (PyTorch counts it the other way round) and epsilon 1e-3.
    return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)


def conv_bn(cin, cout, k, stride=1, groups=1):
    return [nn.Conv2d(cin, cout, k, stride, padding=k // 2, groups=groups, bias=False), bn(cout)]


# ---- models ----------------------------------------------------------------

def mlp():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def cnn():
    # nn.FashionCNN: Keras's `same` for a 2x2 kernel pads after, as
    # PyTorch's padding="same" does.
    return nn.Sequential(
        nn.Conv2d(1, 64, 2, padding="same"), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.3),
        nn.Conv2d(64, 32, 2, padding="same"), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.3),
        nn.Flatten(), nn.Linear(7 * 7 * 32, 256), nn.ReLU(), nn.Dropout(0.5), nn.Linear(256, 10))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(*conv_bn(cin, cout, 3, stride), nn.ReLU(), *conv_bn(cout, cout, 3))
        self.short = nn.Sequential(*conv_bn(cin, cout, 1, stride)) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.body(x) + self.short(x))


def resnet20():
    layers = [*conv_bn(3, 16, 3), nn.ReLU()]
    cin = 16
    for s, c in enumerate([16, 32, 64]):
        for b in range(3):
            layers.append(BasicBlock(cin, c, 2 if s > 0 and b == 0 else 1))
            cin = c
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, t, stride):
        super().__init__()
        hid = cin * t
        layers = [] if t == 1 else [*conv_bn(cin, hid, 1), nn.ReLU6()]
        layers += [*conv_bn(hid, hid, 3, stride, groups=hid), nn.ReLU6(), *conv_bn(hid, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


# MobileNetV2's table (t, c, n, s), the second stage at stride 1 for 32x32.
MOBILENETV2_STAGES = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2),
                      (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenetv2():
    layers = [*conv_bn(3, 32, 3, 1), nn.ReLU6()]
    cin = 32
    for t, c, n, s in MOBILENETV2_STAGES:
        for i in range(n):
            layers.append(InvertedResidual(cin, c, t, s if i == 0 else 1))
            cin = c
    layers += [*conv_bn(cin, 1280, 1), nn.ReLU6(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 10)]
    return nn.Sequential(*layers)


class Transformer(nn.Module):
    def __init__(self, width=256, heads=4, ffn=1024, layers=2, classes=10):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.0, activation="gelu",
                                       layer_norm_eps=1e-5, batch_first=True, norm_first=False)
            for _ in range(layers)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(1))


def stem():
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
                         nn.Flatten(), nn.Linear(32 * 16 * 16, 10))


# ---- fragments --------------------------------------------------------------

def mbblock():
    return nn.Sequential(nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False), nn.Conv2d(64, 64, 1, bias=False))


def stemblock():
    return nn.Sequential(*conv_bn(3, 32, 3), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
                         nn.Conv2d(32, 64, 1, bias=False), nn.AdaptiveAvgPool2d(1), nn.Flatten())


class Attention(nn.Module):
    """x + out(softmax(q kᵀ/√w) v) over layer-normed x, one head."""

    def __init__(self, width=64):
        super().__init__()
        self.norm = nn.LayerNorm(width, eps=1e-5)
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.scale = 1 / math.sqrt(width)

    def forward(self, x):
        y = self.norm(x)
        p = torch.softmax((self.q(y) * self.scale) @ self.k(y).transpose(1, 2), dim=-1)
        return x + self.o(p @ self.v(y))


class LSTM(nn.Module):
    """The LSTM cell of Tartan's fragment: z = x_t W + h U + b, gates i, f,
    c, o, unrolled from h = c = 0; returns the last h."""

    def __init__(self, inputs=64, units=128):
        super().__init__()
        self.W = nn.Parameter(torch.empty(inputs, 4 * units))
        self.U = nn.Parameter(torch.empty(units, 4 * units))
        self.b = nn.Parameter(torch.zeros(4 * units))
        nn.init.xavier_uniform_(self.W)
        nn.init.xavier_uniform_(self.U)

    def forward(self, x):
        h = c = None
        for t in range(x.shape[1]):
            z = x[:, t] @ self.W + self.b
            if h is not None:
                z = z + h @ self.U
            i, f, g, o = z.chunk(4, dim=1)
            i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
            c = i * g if c is None else f * c + i * g
            h = o * torch.tanh(c)
        return h


def depthwise():
    return nn.Conv2d(96, 96, 3, padding=1, groups=96, bias=False)


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(8000, 256)
        nn.init.uniform_(self.table.weight, -0.05, 0.05)
        self.head = nn.Linear(256, 10)

    def forward(self, tokens):
        return self.head(self.table(tokens).mean(1))


def bnrelu6():
    return nn.Sequential(bn(96), nn.ReLU6())


def mean_square(y, _):
    return y.pow(2).mean()


def cross_entropy(y, labels):
    return F.cross_entropy(y, labels)


# name: (kind, batch, constructor, input shape after the batch, loss).
# An input shape of ("tokens", n, vocab) draws token ids.
ENTRIES = [
    ("mlp", "model", 256, mlp, (784,), cross_entropy),
    ("cnn", "model", 64, cnn, (1, 28, 28), cross_entropy),
    ("resnet20", "model", 128, resnet20, (3, 32, 32), cross_entropy),
    ("mobilenetv2", "model", 128, mobilenetv2, (3, 32, 32), cross_entropy),
    ("transformer", "model", 32, Transformer, (128, 256), cross_entropy),
    ("stem", "model", 64, stem, (3, 32, 32), cross_entropy),
    ("mbblock", "fragment", 64, mbblock, (64, 16, 16), mean_square),
    ("stemblock", "fragment", 64, stemblock, (3, 32, 32), mean_square),
    ("attention", "fragment", 16, Attention, (64, 64), mean_square),
    ("lstm", "fragment", 32, LSTM, (16, 64), mean_square),
    ("depthwise", "fragment", 128, depthwise, (96, 32, 32), mean_square),
    ("embedding", "fragment", 32, Embedding, ("tokens", 128, 8000), cross_entropy),
    ("bnrelu6", "fragment", 128, bnrelu6, (96, 32, 32), mean_square),
]


def params(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def make_data(shape, batch, gen):
    if shape[0] == "tokens":
        x = torch.randint(0, shape[2], (batch, shape[1]), generator=gen)
    else:
        x = torch.randn((batch,) + tuple(shape), generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)
    return x, y


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(entry, args, device):
    name, kind, batch, make, shape, loss_fn = entry
    batch = args.batch or batch
    res = dict(name=name, kind=kind, batch=batch, params=0, ms_per_step=0.0, steps=0,
               compile_seconds=0.0, kernels=-1, first_loss=0.0, last_loss=0.0)
    try:
        torch.manual_seed(args.seed)
        gen = torch.Generator().manual_seed(args.seed)
        model = make().to(device)
        model.train()
        res["params"] = params(model)
        if args.params_only:
            return res
        opt = torch.optim.Adam(model.parameters(), **ADAM)
        x_host, y_host = make_data(shape, batch, gen)
        rebind = kind == "model"
        if not rebind:
            x_dev, y_dev = x_host.to(device), y_host.to(device)
        losses = []

        def step():
            t = time.perf_counter()
            x, y = (x_host.to(device), y_host.to(device)) if rebind else (x_dev, y_dev)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            value = loss.item()  # waits for the device
            losses.append(value)
            if not math.isfinite(value):
                raise RuntimeError("step %d: the loss is %r" % (len(losses), value))
            return time.perf_counter() - t

        sync(device)
        res["compile_seconds"] = step()
        warm = 0.0
        for _ in range(args.warmup - 1):
            if warm > args.max_seconds:
                break
            warm += step()
        times = []
        while len(times) < args.steps and (not times or sum(times) < args.max_seconds):
            times.append(step())
        res.update(ms_per_step=statistics.median(times) * 1e3, steps=len(times),
                   first_loss=losses[0], last_loss=losses[-1])
    except Exception as e:  # one entry's failure (out of memory, say) must not end the suite
        res.update(error="%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""),
                   ms_per_step=0.0, steps=0, first_loss=0.0, last_loss=0.0)
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return res


def set_tf32(mode):
    """Sets TF32 for CUDA: "on" (convolutions and matrix products), "off"
    (float32 exact) or "default" (PyTorch's: cuDNN convolutions may use
    TF32, matrix products not). Returns a description."""
    new_api = hasattr(torch.backends, "fp32_precision")
    if mode == "default":
        # Nothing was set, so the legacy flags may be read.
        try:
            conv, mm = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        except RuntimeError:
            return "tf32 default: PyTorch's own settings"
    elif new_api:
        p = "tf32" if mode == "on" else "ieee"
        torch.backends.cuda.matmul.fp32_precision = p
        torch.backends.cudnn.conv.fp32_precision = p
        conv = mm = mode == "on"
    else:
        torch.backends.cuda.matmul.allow_tf32 = mode == "on"
        torch.backends.cudnn.allow_tf32 = mode == "on"
        conv, mm = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    word = lambda on: "tf32" if on else "float32"
    return "tf32 %s: convolutions %s, matmul %s" % (mode, word(conv), word(mm))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fmt_params(n):
    return "{:,}".format(n) if n > 0 else "-"


def print_table(rep, out):
    out.write("%s %s on %s (%s), %d threads, %s\n" % (rep["tool"], rep["version"], rep["device"],
                                                      rep["device_name"], rep["threads"], rep["precision"]))
    head = ("entry", "kind", "batch", "params", "ms/step", "steps", "first step s", "loss first", "loss last")
    rows = []  # (cells, error)
    for r in rep["entries"]:
        cells = [r["name"], r["kind"], str(r["batch"]), fmt_params(r["params"])]
        if r.get("error"):
            rows.append((cells, r["error"]))
            continue
        cells += ["%.2f" % r["ms_per_step"], str(r["steps"]), "%.2f" % r["compile_seconds"],
                  "%.4g" % r["first_loss"], "%.4g" % r["last_loss"]]
        rows.append((cells, ""))
    widths = [max([len(h)] + [len(c[i]) for c, _ in rows if i < len(c)]) for i, h in enumerate(head)]
    out.write("  ".join(h.rjust(w) for h, w in zip(head, widths)) + "\n")
    for cells, err in rows:
        line = "  ".join(c.rjust(w) for c, w in zip(cells, widths))
        out.write(line + ("  error: " + err if err else "") + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (default: the CPUs this process may use)")
    ap.add_argument("--only", default="", help="comma-separated entries to run")
    ap.add_argument("--fragments", action="store_true", help="run the kernel fragments too")
    ap.add_argument("--tf32", default="off", choices=["on", "off", "default"],
                    help="TF32 on CUDA: on, off (float32 exact, the default here) or PyTorch's default")
    ap.add_argument("--steps", type=int, default=100, help="at most this many timed steps per entry")
    ap.add_argument("--max-seconds", type=float, default=3.0, help="end an entry's timed steps after this long")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first, the first one reported as compile")
    ap.add_argument("--batch", type=int, default=0, help="run every entry at this batch size")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="", help="also write the report as JSON to this file")
    ap.add_argument("--params-only", action="store_true", help="count parameters without running")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 1 or args.max_seconds <= 0 or args.batch < 0 or args.threads < 0:
        ap.error("--steps and --warmup must be positive, --max-seconds above 0, --batch and --threads not negative")

    names = [n.strip() for n in args.only.split(",") if n.strip()]
    known = [e[0] for e in ENTRIES]
    for n in names:
        if n not in known:
            ap.error("unknown entry %r (known: %s)" % (n, ", ".join(known)))
    entries = [e for e in ENTRIES if (e[0] in names if names else e[1] == "model" or args.fragments)]

    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        pass
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_suite: --device cuda, but CUDA is not available")
        precision = set_tf32(args.tf32)
        device_name = torch.cuda.get_device_name(device)
        torch.zeros(1, device=device).sum().item()  # create the context before timing
    else:
        precision, device_name = "float32", cpu_name()

    rep = dict(tool="pytorch", version=torch.__version__, device=device.type, device_name=device_name,
               threads=torch.get_num_threads(), precision=precision, max_steps=args.steps,
               max_seconds=args.max_seconds, entries=[])
    for e in entries:
        r = measure(e, args, device)
        rep["entries"].append(r)
        if not args.params_only:
            if r.get("error"):
                print("%-12s error: %s" % (r["name"], r["error"]), file=sys.stderr, flush=True)
            else:
                print("%-12s %10.2f ms/step over %d steps, first step %.2f s, loss %.4g -> %.4g" % (
                    r["name"], r["ms_per_step"], r["steps"], r["compile_seconds"], r["first_loss"],
                    r["last_loss"]), file=sys.stderr, flush=True)
    print_table(rep, sys.stdout)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rep, f, indent=2)
            f.write("\n")
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
