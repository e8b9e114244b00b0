#!/usr/bin/python3
"""Generate metrics.json: Keras-semantics Precision, Recall and AUC values.

Keras's confusion-matrix metrics count, over every element of the epoch's
targets and predictions, true/false positives/negatives at each threshold:
a prediction is positive when strictly above the threshold, a target when
nonzero. AUC's thresholds are [-1e-7, 1/(n-1), ..., (n-2)/(n-1), 1+1e-7]
(float32), and the area is a Riemann sum over consecutive thresholds:
trapezoids ("interpolation"), or the lower or upper of the two heights
("minoring", "majoring"); PR with "interpolation" uses Davis & Goadrich's
interpolation (Keras's interpolate_pr_auc). Written with plain Python loops
over float64 counts, independently of the Go code.

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/metrics/gen_metrics.py
"""

import json
import math
import os

import numpy as np

rng = np.random.default_rng(11)
N, C = 37, 3
y = (rng.random((N, C)) < 0.4).astype(np.float32)
p = rng.random((N, C)).astype(np.float32)
# Predictions exactly on thresholds and at the ends.
p[0, 0], p[1, 0], p[2, 0], p[3, 1], p[4, 2] = 0.0, 1.0, 0.5, np.float32(100 / 199), np.float32(3 / 6)
# Some predictions correlate with the targets, so that the AUC is not 0.5.
p[:20] = np.where(y[:20] > 0, np.maximum(p[:20], np.float32(0.6)), p[:20])
logits = (rng.standard_normal((N, C)) * 2).astype(np.float32)


def counts(y, p, thresholds):
    tp, fp, tn, fn = [], [], [], []
    yf, pf = y.flatten(), p.flatten()
    for t in thresholds:
        a = b = c = d = 0.0
        for yi, pi in zip(yf, pf):
            pos_pred = float(pi) > float(t)
            pos_true = yi != 0
            if pos_pred and pos_true:
                a += 1
            elif pos_pred:
                b += 1
            elif pos_true:
                d += 1
            else:
                c += 1
        tp.append(a), fp.append(b), tn.append(c), fn.append(d)
    return tp, fp, tn, fn


def div(a, b):
    return 0.0 if b == 0 else a / b


def auc(y, p, n, curve, method):
    ths = [np.float32(-1e-7)] + [np.float32(i / (n - 1)) for i in range(1, n - 1)] + [np.float32(1 + 1e-7)]
    tp, fp, tn, fn = counts(y, p, ths)
    if curve == "PR" and method == "interpolation":
        total = 0.0
        for i in range(n - 1):
            dtp = tp[i] - tp[i + 1]
            p0, p1 = tp[i] + fp[i], tp[i + 1] + fp[i + 1]
            slope = div(dtp, max(p0 - p1, 0))
            icpt = tp[i + 1] - slope * p1
            ratio = div(p0, max(p1, 0)) if (p0 > 0 and p1 > 0) else 1.0
            total += div(slope * (dtp + icpt * math.log(ratio)), max(tp[i + 1] + fn[i + 1], 0))
        return total
    rec = [div(tp[i], tp[i] + fn[i]) for i in range(n)]
    if curve == "ROC":
        xs, ys = [div(fp[i], fp[i] + tn[i]) for i in range(n)], rec
    else:
        xs, ys = rec, [div(tp[i], tp[i] + fp[i]) for i in range(n)]
    total = 0.0
    for i in range(n - 1):
        h = {"interpolation": (ys[i] + ys[i + 1]) / 2, "minoring": min(ys[i], ys[i + 1]),
             "majoring": max(ys[i], ys[i + 1])}[method]
        total += (xs[i] - xs[i + 1]) * h
    return total


def precision_recall(y, p, t):
    tp, fp, tn, fn = counts(y, p, [np.float32(t)])
    return div(tp[0], tp[0] + fp[0]), div(tp[0], tp[0] + fn[0])


cases = []
for n in (200, 7):
    for curve, method in (("ROC", "interpolation"), ("ROC", "minoring"), ("ROC", "majoring"),
                          ("PR", "interpolation"), ("PR", "majoring")):
        cases.append({"metric": "auc", "num_thresholds": n, "curve": curve, "summation": method,
                      "logits": False, "value": auc(y, p, n, curve, method)})
sig = (1 / (1 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
cases.append({"metric": "auc", "num_thresholds": 200, "curve": "ROC", "summation": "interpolation",
              "logits": True, "value": auc(y, sig, 200, "ROC", "interpolation")})
for t in (0.5, 0.3, 0.0, 1.0):
    pr, rc = precision_recall(y, p, t)
    cases.append({"metric": "precision", "threshold": t, "class_id": -1, "value": pr})
    cases.append({"metric": "recall", "threshold": t, "class_id": -1, "value": rc})
for k in range(C):
    pr, rc = precision_recall(y[:, k:k + 1], p[:, k:k + 1], 0.5)
    cases.append({"metric": "precision", "threshold": 0.5, "class_id": k, "value": pr})
    cases.append({"metric": "recall", "threshold": 0.5, "class_id": k, "value": rc})

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics.json")
with open(out, "w") as f:
    json.dump({"shape": [N, C], "y": y.flatten().tolist(), "p": p.flatten().tolist(),
               "logits": logits.flatten().tolist(), "cases": cases}, f, indent=1)
    f.write("\n")
print(f"wrote {len(cases)} cases to {out}")
