#!/usr/bin/python3
"""Generate small files in the formats of Keras's CIFAR-100 and IMDB data.

cifar-100-python.tar.gz: cifar-100-python/{train,test,meta} as the real
archive lays them out, pickled dicts (protocol 2) of 4 training and 2 test
images. Image i of a split has planar pixel k = (i*31 + k*7 + s) % 256,
s = 0 for train and 100 for test; fine label (7*i + 3 + s) % 100, coarse
label (3*i + 1 + s) % 20. meta names the classes fine_0.. and coarse_0..
imdb.npz: np.savez of object arrays of lists (x_train, x_test) and int64
labels, as Keras's imdb.npz; imdb_expected.json: what Keras's
imdb.load_data() returns for them under several arguments, computed here
with Keras's steps written out.

Regenerate (from the repository root):
    /usr/bin/python3 data/testdata/keras/gen_keras_formats.py
"""

import io
import json
import os
import pickle
import tarfile

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def split(n, s):
    data = np.array([[(i * 31 + k * 7 + s) % 256 for k in range(3072)] for i in range(n)], dtype=np.uint8)
    return {
        "batch_label": "testing batch",
        "filenames": [f"img_{i}.png" for i in range(n)],
        "fine_labels": [(7 * i + 3 + s) % 100 for i in range(n)],
        "coarse_labels": [(3 * i + 1 + s) % 20 for i in range(n)],
        "data": data,
    }


meta = {"fine_label_names": [f"fine_{i}" for i in range(100)],
        "coarse_label_names": [f"coarse_{i}" for i in range(20)]}
with tarfile.open(os.path.join(here, "cifar-100-python.tar.gz"), "w:gz", format=tarfile.GNU_FORMAT) as tf:
    for name, obj in (("meta", meta), ("test", split(2, 100)), ("train", split(4, 0))):
        b = pickle.dumps(obj, protocol=2)
        info = tarfile.TarInfo("cifar-100-python/" + name)
        info.size, info.mtime = len(b), 0
        tf.addfile(info, io.BytesIO(b))

rng = np.random.default_rng(3)


def reviews(n):
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = [int(w) for w in rng.integers(1, 40, size=int(rng.integers(2, 12)))]
    return out


x_train, x_test = reviews(9), reviews(6)
y_train, y_test = rng.integers(0, 2, 9).astype(np.int64), rng.integers(0, 2, 6).astype(np.int64)
np.savez(os.path.join(here, "imdb.npz"), x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def load(num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2, index_from=3):
    with np.load(os.path.join(here, "imdb.npz"), allow_pickle=True) as f:
        xtr, ltr, xte, lte = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    r = np.random.RandomState(seed)
    idx = np.arange(len(xtr)); r.shuffle(idx); xtr, ltr = xtr[idx], ltr[idx]
    idx = np.arange(len(xte)); r.shuffle(idx); xte, lte = xte[idx], lte[idx]
    if start_char is not None:
        xtr = [[start_char] + [w + index_from for w in x] for x in xtr]
        xte = [[start_char] + [w + index_from for w in x] for x in xte]
    elif index_from:
        xtr = [[w + index_from for w in x] for x in xtr]
        xte = [[w + index_from for w in x] for x in xte]
    else:
        xtr, xte = [list(x) for x in xtr], [list(x) for x in xte]
    if maxlen:
        keep = lambda xs, ls: ([x for x in xs if len(x) < maxlen], [l for x, l in zip(xs, ls) if len(x) < maxlen])
        xtr, ltr = keep(xtr, ltr)
        xte, lte = keep(xte, lte)
    xs = xtr + xte
    labels = np.concatenate([ltr, lte])
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    n = len(xtr)
    return {"x_train": xs[:n], "y_train": [int(v) for v in labels[:n]],
            "x_test": xs[n:], "y_test": [int(v) for v in labels[n:]]}


cases = [
    {"name": "defaults", "args": {}},
    {"name": "num_words 20 skip_top 5", "args": {"num_words": 20, "skip_top": 5}},
    {"name": "maxlen 9", "args": {"maxlen": 9}},
    {"name": "no start, no oov, index_from 0, num_words 15", "args": {"start_char": None, "oov_char": None, "index_from": 0, "num_words": 15}},
    {"name": "seed 7, start 5, oov 9, index_from 4", "args": {"seed": 7, "start_char": 5, "oov_char": 9, "index_from": 4, "num_words": 30}},
]
for c in cases:
    c["want"] = load(**c["args"])
with open(os.path.join(here, "imdb_expected.json"), "w") as f:
    json.dump({"numpy": np.__version__, "cases": cases}, f, indent=1)
    f.write("\n")
print("wrote cifar-100-python.tar.gz, imdb.npz, imdb_expected.json")
