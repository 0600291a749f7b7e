"""PyTorch eager twins of the ten shared torchvision graphs, for `bench.py --compare torch`.

The graphs in shared/models/graphs were exported with torch.onnx from a wrapper module whose
attribute `m` is the torchvision model, so every ONNX initializer is named `m.<state-dict key>`.
The exporter also de-duplicated initializers with equal contents (at export time all batch-norm
weights were ones, all biases zeros, ...): the duplicates are not initializers but `Identity`
nodes `m.<key> = Identity(<other initializer>)`. `state_dict_from_onnx` resolves both, so a
materialized graph gives exactly the values our compiler and onnxruntime see.

torch / torchvision are optional: importing this module never fails; `require_torch()` raises
`TorchUnavailable` with a readable message when they are missing.

    from torch_models import build_torch_model
    model = build_torch_model("resnet18", materialized_onnx_model, device="cuda")
"""

from __future__ import annotations

import numpy as np

PREFIX = "m."

# name -> (torchvision attribute path, constructor kwargs, output selector)
# Every constructor is called with weights=None (no download). googlenet is exported without
# aux heads, without input transform, and init_weights=False just skips the (overwritten) init.
MODELS: dict[str, tuple[str, dict, str | None]] = {
    "resnet18": ("models.resnet18", {"weights": None}, None),
    "resnet50": ("models.resnet50", {"weights": None}, None),
    "mobilenet_v2": ("models.mobilenet_v2", {"weights": None}, None),
    "mobilenet_v3_small": ("models.mobilenet_v3_small", {"weights": None}, None),
    "mobilenet_v3_large": ("models.mobilenet_v3_large", {"weights": None}, None),
    "efficientnet_b0": ("models.efficientnet_b0", {"weights": None}, None),
    "squeezenet1_1": ("models.squeezenet1_1", {"weights": None}, None),
    "googlenet": (
        "models.googlenet",
        {"weights": None, "aux_logits": False, "init_weights": False, "transform_input": False},
        None,
    ),
    "densenet121": ("models.densenet121", {"weights": None}, None),
    "lraspp_mobilenet_v3_large": (
        "models.segmentation.lraspp_mobilenet_v3_large",
        {"weights": None, "weights_backbone": None},
        "out",
    ),
}


class TorchUnavailable(RuntimeError):
    """torch / torchvision (or CUDA) is not usable here."""


def require_torch():
    """Return (torch, torchvision) or raise TorchUnavailable with an explanation."""
    try:
        import torch
    except ImportError as e:
        raise TorchUnavailable(
            f"PyTorch is not installed ({e}); `--compare torch` needs torch and torchvision "
            "(e.g. torch 2.11 + torchvision 0.26). Use `--compare onnxruntime` instead."
        ) from None
    try:
        import torchvision
    except ImportError as e:
        raise TorchUnavailable(
            f"torchvision is not installed ({e}); `--compare torch` builds the models from it."
        ) from None
    return torch, torchvision


def cuda_available() -> bool:
    """True when torch and torchvision import and torch sees a CUDA device."""
    try:
        torch, _ = require_torch()
    except TorchUnavailable:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def state_dict_from_onnx(model, prefix: str = PREFIX) -> dict[str, np.ndarray]:
    """{state-dict key: array} from an ONNX ModelProto's initializers and Identity aliases.

    Keys are the names that start with `prefix`, with the prefix removed. Raises ValueError
    when an Identity alias does not lead to an initializer.
    """
    from onnx import numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    alias = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity"}

    def root(name: str) -> str:
        seen = set()
        while name in alias and name not in inits:
            if name in seen:
                raise ValueError(f"Identity cycle at {name!r}")
            seen.add(name)
            name = alias[name]
        return name

    arrays: dict[str, np.ndarray] = {}
    cache: dict[str, np.ndarray] = {}
    names = [n for n in inits if n.startswith(prefix)]
    names += [n for n in alias if n.startswith(prefix) and n not in inits]
    for name in names:
        src = root(name)
        if src not in inits:
            raise ValueError(f"{name!r} is an Identity of {src!r}, which is not an initializer")
        if src not in cache:
            cache[src] = numpy_helper.to_array(inits[src])
        arrays[name[len(prefix):]] = cache[src]
    return arrays


def _resolve(torchvision, dotted: str):
    obj = torchvision
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def build_torch_model(name: str, onnx_model, device: str = "cuda"):
    """The torchvision model `name` in eval mode on `device`, with the ONNX model's weights.

    Every parameter and buffer of the torch model must come from the ONNX file, except the
    batch-norm `num_batches_tracked` counters (not exported; unused in eval). Unknown keys,
    missing keys or shape mismatches raise ValueError. The returned module maps an NCHW input
    tensor to one output tensor (for lraspp, the 'out' entry of the result dict).
    """
    torch, torchvision = require_torch()
    if name not in MODELS:
        raise ValueError(f"no torch twin for {name!r}; known: {', '.join(MODELS)}")
    path, kwargs, select = MODELS[name]
    net = _resolve(torchvision, path)(**kwargs)
    net.eval()

    arrays = state_dict_from_onnx(onnx_model)
    expected = net.state_dict()
    needed = {k for k in expected if not k.endswith("num_batches_tracked")}
    missing = sorted(needed - set(arrays))
    unexpected = sorted(set(arrays) - set(expected))
    bad_shape = sorted(
        f"{k}: onnx {list(arrays[k].shape)} vs torch {list(expected[k].shape)}"
        for k in needed & set(arrays)
        if tuple(arrays[k].shape) != tuple(expected[k].shape)
    )
    if missing or unexpected or bad_shape:
        raise ValueError(
            f"{name}: ONNX initializers do not match the torchvision state dict: "
            f"missing {missing[:8]}{'...' if len(missing) > 8 else ''} ({len(missing)}), "
            f"unexpected {unexpected[:8]}{'...' if len(unexpected) > 8 else ''} ({len(unexpected)}), "
            f"shape mismatches {bad_shape[:4]} ({len(bad_shape)})"
        )
    state = {
        k: torch.from_numpy(np.ascontiguousarray(v)).to(expected[k].dtype) for k, v in arrays.items()
    }
    result = net.load_state_dict(state, strict=False)
    leftover = [k for k in result.missing_keys if not k.endswith("num_batches_tracked")]
    if leftover or result.unexpected_keys:
        raise ValueError(
            f"{name}: load_state_dict left missing={leftover} unexpected={result.unexpected_keys}"
        )
    # Belt and braces: every parameter/buffer now equals the ONNX value.
    for k, v in net.state_dict().items():
        if k in arrays and not np.array_equal(v.detach().cpu().numpy(), arrays[k]):
            raise ValueError(f"{name}: {k} was not loaded")

    if select is not None:
        net = _Select(torch, net, select)
    return net.to(device).eval()


def _Select(torch, net, key):
    """Wrap a model that returns a dict so that it returns dict[key]."""

    class Select(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = net

        def forward(self, x):
            return self.m(x)[key]

    return Select()
