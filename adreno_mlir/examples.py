"""Small ONNX models the project builds itself (for the README demo and smoke tests).

`tinynet` is a 64x64 image classifier that exercises the layers of the real
torchvision graphs in miniature: conv + batch norm + ReLU, max pool, a residual
block, a depthwise conv with HardSwish, squeeze-and-excite (global average pool,
1x1 convs, HardSigmoid, Mul), a channel concat, average pool, bilinear resize, a
flatten + Gemm head and Softmax. Weights are seeded random values.

    adreno-mlir example tinynet -o tinynet.onnx
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Graph:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{self.count}"

    def weight(self, shape, scale: float | None = None, positive: bool = False) -> str:
        name = self.name("w")
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        s = scale if scale is not None else np.sqrt(2.0 / fan_in)
        arr = self.rng.uniform(0.5, 1.5, shape) if positive else self.rng.normal(0.0, s, shape)
        self.inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"/{out}", **attrs))
        return out

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
                act: str | None = "Relu") -> str:
        w = self.weight((cout, cin // groups, k, k))
        y = self.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4, group=groups)
        bn = [self.weight((cout,), positive=True), self.weight((cout,), 0.1),
              self.weight((cout,), 0.1), self.weight((cout,), positive=True)]
        y = self.node("BatchNormalization", [y, *bn])
        return self.node(act, [y]) if act else y


def tinynet(seed: int = 0) -> onnx.ModelProto:
    g = _Graph(seed)
    x = g.conv_bn("input", 3, 16, 3, stride=2)                       # 32x32
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 16x16
    r = g.conv_bn(g.conv_bn(x, 16, 16, 3), 16, 16, 3, act=None)
    x = g.node("Relu", [g.node("Add", [r, x])])                      # residual block
    d = g.conv_bn(x, 16, 16, 3, groups=16, act="HardSwish")          # depthwise
    s = g.node("GlobalAveragePool", [d])                             # squeeze-and-excite
    s = g.node("Relu", [g.node("Conv", [s, g.weight((8, 16, 1, 1)), g.weight((8,), 0.1)])])
    s = g.node("HardSigmoid", [g.node("Conv", [s, g.weight((16, 8, 1, 1)), g.weight((16,), 0.1)])],
               alpha=1.0 / 6, beta=0.5)
    d = g.node("Mul", [d, s])
    x = g.node("Concat", [x, d], axis=1)                              # 32 channels
    x = g.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])  # 8x8
    up = g.node("Resize", [x, "", "scales"], mode="linear")            # 16x16
    x = g.node("MaxPool", [up], kernel_shape=[2, 2], strides=[2, 2])    # 8x8
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    logits = g.node("Gemm", [x, g.weight((10, 32), 0.3), g.weight((10,), 0.1)], transB=1)
    probs = g.node("Softmax", [logits], axis=1)
    g.nodes[-1].output[0] = "probabilities"
    g.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    graph = helper.make_graph(
        g.nodes, "tinynet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        g.inits,
    )
    del probs
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


EXAMPLES: dict[str, Callable[[int], onnx.ModelProto]] = {"tinynet": tinynet}


def write_example(name: str, path: str | Path, seed: int = 0) -> Path:
    if name not in EXAMPLES:
        raise ValueError(f"unknown example '{name}'; available: {', '.join(EXAMPLES)}")
    path = Path(path)
    onnx.save(EXAMPLES[name](seed), str(path))
    return path
