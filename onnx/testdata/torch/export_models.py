#!/usr/bin/python3
"""Reference ONNX models from PyTorch, for the ONNX importer's tests.

    export_models.py OUTDIR

builds, with seeded weights, a ResNet-18 and a MobileNetV2 (written out here
after torchvision's definitions, which this machine lacks), a two-layer LSTM
(hidden 64, 16 steps) and a two-layer transformer encoder (d_model 64, 4
heads), and writes for each NAME into OUTDIR:

    NAME.onnx          the model, exported by torch.onnx.export in eval mode
    NAME_input.npy     a fixed input
    NAME_output.npy    PyTorch's output for it

and prints, per model, the opset, the file size and the ONNX op types with
their counts. ResNet-18 keeps its BatchNormalization nodes; in MobileNetV2
the export folds them into the convolutions. Batch-normalisation statistics and affine parameters are drawn
at random (not left at 0 and 1) so that they matter in inference.
"""
import inspect
import json
import os
import sys

import numpy as np
import torch
from torch import nn

OPSET = 17


# ---- ResNet-18 (torchvision.models.resnet18) ----

class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(64, 2)
        self.layer2 = self._make_layer(128, 2, stride=2)
        self.layer3 = self._make_layer(256, 2, stride=2)
        self.layer4 = self._make_layer(512, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(planes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


# ---- MobileNetV2 (torchvision.models.mobilenet_v2) ----

def make_divisible(v, divisor=8, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU6(nn.Sequential):
    def __init__(self, inp, out, kernel=3, stride=1, groups=1):
        super().__init__(nn.Conv2d(inp, out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(out), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU6(inp, hidden, kernel=1))
        layers += [ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, round_nearest=8, dropout=0.2):
        super().__init__()
        input_channel = make_divisible(32 * width_mult, round_nearest)
        last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]
        features = [ConvBNReLU6(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t))
                input_channel = output_channel
        features.append(ConvBNReLU6(input_channel, last_channel, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---- sequence models ----

class LSTMModel(nn.Module):
    """A two-layer LSTM over 16 steps of 32 features, hidden 64; returns
    every step's output of the last layer."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=32, hidden_size=64, num_layers=2, batch_first=True)

    def forward(self, x):
        out, _ = self.lstm(x)
        return out


class TransformerModel(nn.Module):
    """Two transformer encoder layers, d_model 64, 4 heads, feed-forward 128."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def randomize_batchnorm(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def models():
    gen = torch.Generator().manual_seed(1234)
    out = []
    for name, ctor, shape in [("resnet18", ResNet18, (1, 3, 224, 224)),
                              ("mobilenet_v2", MobileNetV2, (1, 3, 224, 224)),
                              ("lstm", LSTMModel, (2, 16, 32)),
                              ("transformer", TransformerModel, (2, 16, 64))]:
        torch.manual_seed(0)
        m = ctor()
        with torch.no_grad():
            randomize_batchnorm(m, gen)
        m.eval()
        x = torch.randn(*shape, generator=gen)
        out.append((name, m, x))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_models.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    import onnx
    summary = {}
    for name, m, x in models():
        path = os.path.join(outdir, name + ".onnx")
        # Gradients stay enabled: in eval mode under no_grad, PyTorch runs the
        # transformer layers through a fused kernel that ONNX export lacks.
        y = m(x).detach()
        # ResNet-18 keeps its BatchNormalization nodes (TrainingMode.PRESERVE
        # of a model in eval mode skips the export's Conv+BN fusion); the
        # others are exported in the default EVAL mode, which fuses them.
        mode = torch.onnx.TrainingMode.PRESERVE if name == "resnet18" else torch.onnx.TrainingMode.EVAL
        # The image models take any batch size (the leading dimension "N").
        dynamic = {"input": {0: "N"}, "output": {0: "N"}} if name in ("resnet18", "mobilenet_v2") else None
        kw = {}
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            # Newer PyTorch exports through torch.export by default; the
            # TorchScript exporter gives the same graphs on every version.
            kw["dynamo"] = False
        torch.onnx.export(m, (x,), path, opset_version=OPSET, input_names=["input"], output_names=["output"],
                          do_constant_folding=True, training=mode, dynamic_axes=dynamic, **kw)
        np.save(os.path.join(outdir, name + "_input.npy"), x.numpy())
        np.save(os.path.join(outdir, name + "_output.npy"), y.numpy())
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        ops = {}
        for n in model.graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        summary[name] = {
            "opset": [{"domain": o.domain, "version": o.version} for o in model.opset_import],
            "bytes": os.path.getsize(path),
            "input": list(x.shape),
            "output": list(y.shape),
            "ops": dict(sorted(ops.items())),
        }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
