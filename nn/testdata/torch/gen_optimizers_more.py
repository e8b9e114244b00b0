#!/usr/bin/python3
"""Generate optimizers_more.json: five full-batch steps of Lion, SGD with
momentum, Nesterov momentum and weight decay, RMSprop (plain, and centered
with momentum), Adam and AdamW, and of SGD on losses with L1, L2 and L1L2
weight penalties, run by PyTorch in float64.

The problem is gen_optimizers.py's (imported from it): Dense(2) over 3
features, kernel (3,2) in Keras's layout (in, out), bias (2), 4 samples,
Keras's mean squared error, the whole batch every step. Keras's updates and
the torch.optim arguments that give them:

  lion:     torch 1.13 has no Lion; KerasLion below applies Keras's update
            with torch tensor ops:
              w = w - lr*sign(b1*m + (1 - b1)*g);  m = b2*m + (1 - b2)*g
  sgd momentum, nesterov: torch SGD's buffer b = mu*b + g with
            w -= lr*b (or w -= lr*(g + mu*b), Nesterov) equals Keras's
            v = mu*v - lr*g; w += v (or w += mu*v - lr*g) at a constant lr.
  sgd weight_decay: Keras's decoupled w -= lr*wd*w before the step w -= lr*g
            equals torch SGD's L2 weight_decay (g + wd*w) without momentum.
  rmsprop:  Keras divides by sqrt(ms + eps) (centered: sqrt(ms - mg^2 + eps)),
            torch by sqrt(ms) + eps; with eps 1e-12 in both the two differ by
            far less than the float32 rounding the Go test allows. torch's
            alpha is Keras's rho; torch's momentum buffer b = mu*b + g/denom
            with w -= lr*b equals Keras's mom = mu*mom + lr*g/denom.
  adam, adamw: with eps 0 torch's Adam equals Keras's (the two place eps
            differently); torch AdamW's w *= 1 - lr*wd before the step is
            Keras's decoupled weight decay.
  L1, L2, L1L2 (SGD, lr 0.1): the loss is the mean squared error plus the
            penalties l1*sum|w| + l2*sum w^2 of the regularized weights, as
            Keras reports and differentiates it.
Clipping (lion clipvalue) is gen_optimizers.py's clip().

The output lists, per case, the loss before each step (penalties included)
and the weights after the five steps. Regenerate from the repository root:
    /usr/bin/python3 nn/testdata/torch/gen_optimizers_more.py
"""

import json
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_optimizers as base  # noqa: E402  (same problem, same clipping)

torch.set_default_dtype(torch.float64)


class KerasLion(torch.optim.Optimizer):
    """Keras's Lion: w = w - lr*sign(b1*m + (1 - b1)*g); m = b2*m + (1 - b2)*g."""

    def __init__(self, params, lr, betas=(0.9, 0.99)):
        super().__init__(params, dict(lr=lr, betas=betas))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                st = self.state[p]
                if not st:
                    st["m"] = torch.zeros_like(p)
                g, m = p.grad, st["m"]
                p.sub_(group["lr"] * torch.sign(b1 * m + (1 - b1) * g))
                m.mul_(b2).add_((1 - b2) * g)


def penalty(k, b, reg):
    """The penalties of reg = {"kernel": (l1, l2), "bias": (l1, l2)}."""
    total = 0.0
    for w, name in ((k, "kernel"), (b, "bias")):
        if name in reg:
            l1, l2 = reg[name]
            total = total + l1 * w.abs().sum() + l2 * (w * w).sum()
    return total


CASES = [
    ("lion", lambda p: KerasLion(p, lr=0.01), None, {}),
    ("lion beta", lambda p: KerasLion(p, lr=0.02, betas=(0.5, 0.9)), None, {}),
    ("lion clipvalue", lambda p: KerasLion(p, lr=0.01), ("clipvalue", 0.3), {}),
    ("sgd momentum", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), None, {}),
    ("sgd nesterov", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True), None, {}),
    ("sgd weight_decay", lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.2), None, {}),
    ("rmsprop", lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-12), None, {}),
    ("rmsprop centered momentum",
     lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.8, eps=1e-12, momentum=0.5, centered=True), None, {}),
    ("adam", lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.9, 0.999), eps=0), None, {}),
    ("adamw", lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99), eps=0, weight_decay=0.5), None, {}),
    ("l1 kernel", lambda p: torch.optim.SGD(p, lr=0.1), None, {"kernel": (0.05, 0.0)}),
    ("l2 kernel", lambda p: torch.optim.SGD(p, lr=0.1), None, {"kernel": (0.0, 0.2)}),
    ("l1l2 kernel l2 bias", lambda p: torch.optim.SGD(p, lr=0.1), None,
     {"kernel": (0.03, 0.1), "bias": (0.0, 0.3)}),
]


def run(make, how, reg):
    x, y = torch.tensor(base.X), torch.tensor(base.Y)
    k = torch.tensor(base.KERNEL, requires_grad=True)
    b = torch.tensor(base.BIAS, requires_grad=True)
    opt = make([k, b])
    losses = []
    for _ in range(base.STEPS):
        opt.zero_grad()
        loss = ((x @ k + b - y) ** 2).mean() + penalty(k, b, reg)
        loss.backward()
        losses.append(loss.item())
        base.clip([k, b], how)
        opt.step()
    return {"losses": losses, "kernel": k.detach().flatten().tolist(), "bias": b.detach().tolist()}


def main():
    out = {
        "note": "torch " + torch.__version__ + ", float64; see gen_optimizers_more.py",
        "x": base.X, "y": base.Y, "kernel": base.KERNEL, "bias": base.BIAS, "steps": base.STEPS,
        "cases": {name: run(make, how, reg) for name, make, how, reg in CASES},
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizers_more.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
