"""A learned cost model: which kernel configuration to use where no tuning entry matches.

Trained on the tuning database's measurements of one device (`measurements` rows: kernel
signature, configuration, status, median time), it predicts, for a kernel signature and a
configuration, log(time / the default configuration's time). select-kernel-config's
`cost-model="PATH"` then picks, per kernel without an override, the candidate of the
tuner's space (adreno_mlir.tuning.space) with the lowest prediction, when that prediction
beats the default by a margin (docs/tuning.md, "Learned defaults (cost model)").

    python -m adreno_mlir.tuning.cost_model train --db pocl.db --device-match pthread \\
        --profile pocl-cpu --out model.json [--rows export.json ...] [--exclude-models m1,m2]
    python -m adreno_mlir.tuning.cost_model evaluate --db pocl.db --model model.json

- `features(signature, config)`: a flat {name: float} read from the signature text and
  the configuration only, so training (from exported rows) and prediction (in the pass)
  share it. Strings are categorical codes (indices into vocabularies kept in the artifact).
- `train(rows)`: LightGBM (imported only here) on those features.
- `CostModel`: the artifact (JSON: the booster's `dump_model()`, the feature schema, the
  vocabularies, what it is for), evaluated by a small numpy tree walker: compiling with a
  cost model does not import LightGBM (0.7 s through scipy).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adreno_mlir.errors import CompileError

FORMAT = "adreno-mlir-cost-model"
FORMAT_VERSION = 1

MARGIN = 0.9
"""`choose` keeps the default unless a candidate's predicted time is below this fraction of it."""

FAILED_RATIO = 4.0
"""The target (as a time ratio to the default) of a configuration that built or ran wrong
(build_error, wrong_output, timeout, crash): a large penalty, so that the model learns to
avoid it. compile_error rows are dropped: the pass never offers a configuration the
lowering refuses (Space.with_pruning)."""

PENALIZED = ("build_error", "wrong_output", "timeout", "crash")

CATEGORICAL = "categorical"

TRAIN_PARAMS: dict[str, Any] = {
    "objective": "regression", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 5,
    "min_data_in_bin": 1, "feature_pre_filter": False, "seed": 0, "deterministic": True,
    "force_row_wise": True, "num_threads": 1, "verbose": -1,
}
NUM_TREES = 200


# --------------------------------------------------------------------------- features


def _split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` outside any bracket (<>, (), [], {})."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "<([{":
            depth += 1
        elif text[i] in ">)]}":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


@dataclass(frozen=True)
class ParsedSignature:
    head: str
    operands: tuple[str, ...]
    results: tuple[str, ...]
    attrs: tuple[tuple[str, str], ...]
    tail: tuple[str, ...]


def parse_signature(signature: str) -> ParsedSignature:
    """`graph.conv2d(T,T,T)->T{k=v;...}+relu+add` into its parts (kernel_signature's text)."""
    open_ = signature.find("(")
    if open_ < 0:
        return ParsedSignature(signature, (), (), (), ())
    head = signature[:open_]
    close = _closing(signature, open_)
    operands = tuple(_split_top(signature[open_ + 1:close]))
    rest = signature[close + 1:]
    results: tuple[str, ...] = ()
    attrs: list[tuple[str, str]] = []
    if rest.startswith("->"):
        rest = rest[2:]
        depth, i = 0, 0
        while i < len(rest):  # the result types end at the attribute block (or the tail)
            ch = rest[i]
            if ch in "<([":
                depth += 1
            elif ch in ">)]":
                depth -= 1
            elif depth == 0 and ch in "{+":
                break
            i += 1
        text = rest[:i].strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        results = tuple(_split_top(text))
        rest = rest[i:]
    if rest.startswith("{"):
        end = _closing(rest, 0)
        for item in _split_top(rest[1:end], ";"):
            k, _, v = item.partition("=")
            attrs.append((k.strip(), v.strip()))
        rest = rest[end + 1:]
    tail = tuple(t for t in rest.split("+") if t)
    return ParsedSignature(head, operands, results, tuple(attrs), tail)


_TENSOR = re.compile(r"tensor<([^,>]*)")


def _type_features(prefix: str, text: str, out: dict[str, Any]) -> None:
    m = _TENSOR.search(text)
    if m is None:
        out[f"{prefix}_dtype"] = (CATEGORICAL, text.split("<")[0])
        return
    parts = m.group(1).split("x")
    dims = [float(p) if p.isdigit() else math.nan for p in parts[:-1]]
    out[f"{prefix}_rank"] = float(len(dims))
    for i, d in enumerate(dims):
        out[f"{prefix}_d{i}"] = d
    numel = math.prod(dims) if dims else 1.0
    out[f"{prefix}_log2numel"] = math.log2(numel) if numel > 0 else (0.0 if numel == 0 else math.nan)
    dtype = parts[-1].strip()
    out[f"{prefix}_dtype"] = (CATEGORICAL, dtype)
    out[f"{prefix}_f16"] = float(dtype == "f16")
    out[f"{prefix}_image"] = float("#texture.image" in text)
    out[f"{prefix}_nchw4c"] = float("nchw4c" in text)


_INT = re.compile(r"^(-?\d+)\s*:\s*i\d+$")
_FLOAT = re.compile(r"^(-?[\d.]+(?:e[-+]?\d+)?)\s*:\s*f\d+$")
_ARRAY = re.compile(r"^array<i\d+(?::\s*([-\d,\s]*))?>$")


def _attr_features(key: str, value: str, out: dict[str, Any]) -> None:
    name = f"attr_{key}"
    if m := _INT.match(value):
        out[name] = float(m.group(1))
    elif m := _FLOAT.match(value):
        out[name] = float(m.group(1))
    elif m := _ARRAY.match(value):
        items = [float(x) for x in (m.group(1) or "").split(",") if x.strip()]
        out[f"{name}_len"] = float(len(items))
        out[f"{name}_sum"] = float(sum(items))
        for i, x in enumerate(items[:4]):
            out[f"{name}_{i}"] = x
    elif value in ("true", "false"):
        out[name] = float(value == "true")
    elif value.startswith('"'):
        out[name] = (CATEGORICAL, value)


def raw_features(signature: str, config: dict[str, Any]) -> dict[str, Any]:
    """{name: float, or (CATEGORICAL, str)} of one (signature, configuration)."""
    sig = parse_signature(signature)
    out: dict[str, Any] = {"head": (CATEGORICAL, sig.head), "n_operands": float(len(sig.operands)),
                           "tail_len": float(len(sig.tail))}
    for i, t in enumerate(sig.operands):
        _type_features(f"in{i}", t, out)
    for i, t in enumerate(sig.results):
        _type_features("out" if i == 0 else f"out{i}", t, out)
    for k, v in sig.attrs:
        _attr_features(k, v, out)
    if "conv" in sig.head and len(sig.operands) > 1 and out.get("in1_rank", 0) >= 4:
        out["kernel_h"], out["kernel_w"] = out["in1_d2"], out["in1_d3"]
        out["kernel_size"] = out["kernel_h"] * out["kernel_w"]
    for t in sig.tail:
        if t.startswith("pool_partials"):
            out["tail_pool_partials"] = 1.0
    for key, value in sorted(config.items()):
        name = f"cfg_{key}"
        if key == "work_group":
            dims = list(value or ())
            out["cfg_work_group_driver"] = float(not dims)
            for i in range(3):
                out[f"{name}_{i}"] = float(dims[i]) if i < len(dims) else (1.0 if dims else math.nan)
            out[f"{name}_product"] = float(math.prod(dims)) if dims else math.nan
        elif isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, str):
            out[name] = (CATEGORICAL, value)
        elif isinstance(value, (list, tuple)):
            for i, x in enumerate(value[:4]):
                if isinstance(x, (int, float)):
                    out[f"{name}_{i}"] = float(x)
    return out


def features(signature: str, config: dict[str, Any],
             vocab: dict[str, Sequence[str]] | None = None) -> dict[str, float]:
    """{name: float} of one (signature, configuration): the signature's head op, every
    operand's and result's dims, element type and memory scope, the integer attributes,
    the fused tail, and every configuration key; a string is its index in `vocab[name]`
    (the artifact's vocabularies; NaN for a string not in it), or without a vocabulary
    a stable hash of it."""
    out: dict[str, float] = {}
    for name, value in raw_features(signature, config).items():
        if isinstance(value, tuple):
            text = value[1]
            if vocab is None:
                import zlib

                out[name] = float(zlib.crc32(text.encode()) % 1_000_003)
            else:
                words = vocab.get(name, ())
                out[name] = float(words.index(text)) if text in words else math.nan
        else:
            out[name] = value
    return out


# --------------------------------------------------------------------------- the tree evaluator


class Trees:
    """LightGBM's `dump_model()` trees as flat arrays, evaluated for many rows at once
    (numerical splits only: categoricals are integer codes)."""

    def __init__(self, dump: dict[str, Any]):
        feat, thr, dleft, mtype, left, right, value = [], [], [], [], [], [], []
        roots = []
        depth = 0

        def add(node: dict[str, Any], d: int) -> int:
            nonlocal depth
            depth = max(depth, d)
            idx = len(feat)
            for a in (feat, thr, dleft, mtype, left, right, value):
                a.append(0)
            if "leaf_value" in node:
                feat[idx], thr[idx], left[idx], right[idx] = 0, 0.0, idx, idx
                value[idx] = float(node["leaf_value"])
                return idx
            if node.get("decision_type", "<=") != "<=":
                raise ValueError(f"split decision_type {node.get('decision_type')!r} (only numerical '<=' splits)")
            feat[idx] = int(node["split_feature"])
            thr[idx] = float(node["threshold"])
            dleft[idx] = bool(node["default_left"])
            mtype[idx] = {"None": 0, "Zero": 1, "NaN": 2}[node.get("missing_type", "None")]
            value[idx] = 0.0
            left[idx] = add(node["left_child"], d + 1)
            right[idx] = add(node["right_child"], d + 1)
            return idx

        if dump.get("num_tree_per_iteration", 1) != 1:
            raise ValueError("a model with several trees per iteration (only regression is evaluated)")
        for tree in dump["tree_info"]:
            roots.append(add(tree["tree_structure"], 0))
        self.feature = np.array(feat, dtype=np.int64)
        self.threshold = np.array(thr, dtype=np.float64)
        self.default_left = np.array(dleft, dtype=bool)
        self.missing = np.array(mtype, dtype=np.int8)
        self.left = np.array(left, dtype=np.int64)
        self.right = np.array(right, dtype=np.int64)
        self.value = np.array(value, dtype=np.float64)
        self.roots = np.array(roots, dtype=np.int64)
        self.depth = depth
        self.num_features = int(dump.get("max_feature_idx", -1)) + 1

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The sum of every tree's leaf, per row of `x` (rows x features, NaN: missing)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            x = x[None, :]
        if len(self.roots) == 0:
            return np.zeros(len(x))
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        rows = np.arange(len(x))[:, None]
        for _ in range(self.depth):
            f = self.feature[node]
            v = x[rows, f]
            nan = np.isnan(v)
            mt = self.missing[node]
            v = np.where(nan & (mt != 2), 0.0, v)  # LightGBM: NaN is 0 unless missing_type is NaN
            miss = ((mt == 1) & (np.abs(v) <= 1e-35)) | ((mt == 2) & nan)
            go_left = np.where(miss, self.default_left[node], v <= self.threshold[node])
            node = np.where(go_left, self.left[node], self.right[node])
        return self.value[node].sum(axis=1)


# --------------------------------------------------------------------------- the artifact


class CostModel:
    """A trained cost model (what `train` returns and `load` reads)."""

    def __init__(self, doc: dict[str, Any], path: str = "<memory>"):
        self.path = path
        try:
            if doc.get("format") != FORMAT:
                raise ValueError(f"format is {doc.get('format')!r}, not {FORMAT!r}")
            if doc.get("version") != FORMAT_VERSION:
                raise ValueError(f"format version {doc.get('version')!r}; this adreno-mlir reads {FORMAT_VERSION}")
            self.schema: list[str] = list(doc["schema"])
            self.vocab: dict[str, list[str]] = {k: list(v) for k, v in doc["vocab"].items()}
            self.profile: str = str(doc["profile"])
            self.device_match: str = str(doc["device_match"])
            self.training_models: list[str] = list(doc.get("training_models", []))
            self.rows: int = int(doc.get("rows", 0))
            self.margin: float = float(doc.get("margin", MARGIN))
            self.trees = Trees(doc["booster"])
            if self.trees.num_features != len(self.schema):
                raise ValueError(f"the booster reads {self.trees.num_features} features, the schema names "
                                 f"{len(self.schema)}")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            detail = f"lacks field {e}" if isinstance(e, KeyError) else str(e)
            raise CompileError(f"cost model {path} is not a usable {FORMAT} artifact: {detail}") from None
        self.doc = doc
        self._index = {n: i for i, n in enumerate(self.schema)}

    def matrix(self, signature: str, configs: Sequence[dict[str, Any]]) -> np.ndarray:
        x = np.full((len(configs), len(self.schema)), math.nan)
        for r, cfg in enumerate(configs):
            for name, value in features(signature, cfg, self.vocab).items():
                i = self._index.get(name)
                if i is not None:
                    x[r, i] = value
        return x

    def predict(self, signature: str, configs: Sequence[dict[str, Any]]) -> np.ndarray:
        """Predicted log(time / the default's time) of each configuration."""
        return self.trees.predict(self.matrix(signature, configs))

    def choose(self, signature: str, default: dict[str, Any], candidates: Sequence[dict[str, Any]],
               margin: float | None = None) -> tuple[dict[str, Any], float]:
        """The candidate with the lowest predicted time and its predicted ratio to the
        default, if that ratio is below `margin` (the artifact's, else MARGIN); else the
        default and 1.0. A kernel whose head op the corpus never measured (e.g. MatMulNBits
        before a decoder is tuned) keeps its default: the trees would extrapolate (an artifact
        without a head vocabulary, e.g. one written by hand, does not read the head)."""
        margin = self.margin if margin is None else margin
        ratios = self.ratios(signature, default, candidates)
        if ratios is None:
            return default, 1.0
        best = int(np.argmin(ratios))  # the first of equals: candidates come in suggestion order
        if ratios[best] < margin:
            return candidates[best], float(ratios[best])
        return default, 1.0

    def ratios(self, signature: str, default: dict[str, Any],
               candidates: Sequence[dict[str, Any]]) -> np.ndarray | None:
        """Each candidate's predicted time over the default's; None where the model has no
        say: no candidates, or a head op the corpus never measured (see `choose`)."""
        heads = self.vocab.get("head")
        if not candidates or (heads is not None and parse_signature(signature).head not in heads):
            return None
        pred = self.predict(signature, [default, *candidates])
        return np.exp(pred[1:] - pred[0])

    def matches_profile(self, profile_name: str) -> bool:
        """Whether a compile for target profile `profile_name` may use this model: the
        profile it was trained for, or a live device's profile (`device-<name>`,
        `auto:<name>`) whose name holds the device pattern."""
        if profile_name == self.profile:
            return True
        pattern = _slug(self.device_match)
        return bool(pattern) and pattern in _slug(profile_name)

    def save(self, path: str | Path) -> None:
        import json

        text = json.dumps(self.doc, separators=(",", ":"), sort_keys=True) + "\n"
        if str(path).endswith(".gz"):  # gzipped with no time in the header: same model, same bytes
            import gzip

            with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
                f.write(text.encode())
        else:
            Path(path).write_text(text)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_LOADED: dict[tuple[str, int, int], CostModel] = {}


def load(path: str | Path) -> CostModel:
    """The artifact at `path` (cached per file and modification time); a CompileError
    naming the file when it cannot be read or is not a cost model."""
    from adreno_mlir.errors import read_json

    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise CompileError(f"cannot read cost model {path}: {e.strerror or e}") from None
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _LOADED:
        doc = read_json(path, CompileError, "", "cost model ")
        if not isinstance(doc, dict):
            raise CompileError(f"cost model {path} is not a usable {FORMAT} artifact: not a JSON object")
        _LOADED[key] = CostModel(doc, str(path))
    return _LOADED[key]


SHIPPED = Path(__file__).resolve().parent / "cost_models"
"""The artifacts the package ships, one per device kind (`<profile>.json.gz`; rebuilt from
tuning-corpus/ by `python -m adreno_mlir.tuning.cost_model train`, docs/tuning.md)."""


def shipped_for(profile: Any) -> str:
    """The path of the shipped artifact a compile for target `profile` (a TargetProfile,
    or its name) uses with `cost_model="auto"`: the one trained for that profile, or whose
    device pattern the live profile's name holds; "" where none is (the rules alone)."""
    name = profile if isinstance(profile, str) else profile.name
    for path in sorted(SHIPPED.glob("*.json.gz")):
        if load(path).matches_profile(name):
            return str(path)
    return ""


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class Sample:
    """One measurement for training: (device, driver, compiler) says which default it is
    compared with."""

    group: tuple[str, str, str]
    signature: str
    config: dict[str, Any]
    is_default: bool
    status: str
    median_ms: float | None
    model: str = ""
    device: str = ""


def samples_of_db(path: str | Path) -> list[Sample]:
    """Every row of a tuning database."""
    import sqlite3

    from adreno_mlir.tuning.db import TuningDB, _config

    with TuningDB(path) as db:  # checks the schema version
        cur = db.conn.execute("SELECT device, driver, compiler, signature, config, is_default, status, median_ms, "
                              "model FROM measurements ORDER BY device, driver, compiler, signature, config")
        try:
            return [Sample((d, v, c), s, _config(cfg), bool(dflt), st, med, m or "", d)
                    for d, v, c, s, cfg, dflt, st, med, m in cur]
        except sqlite3.DatabaseError as e:
            raise CompileError(f"{path}: {e}") from None


def samples_of_export(path: str | Path) -> list[Sample]:
    """Every row of an `adreno-mlir tune --export` file (.json or .json.gz)."""
    from adreno_mlir.errors import read_json

    data = read_json(path, CompileError, "", "tuning export ")
    if not isinstance(data, dict) or data.get("format") != "adreno-mlir-tuning":
        raise CompileError(f"{path} is not an adreno-mlir tuning export (`adreno-mlir tune --export`)")
    out = []
    for r in data.get("rows", []):
        try:
            cfg = {k: tuple(v) if isinstance(v, list) else v for k, v in r["config"].items()}
            out.append(Sample((r["device"], r["driver"], r["compiler"]), r["signature"], cfg, bool(r["is_default"]),
                              r["status"], r.get("median_ms"), r.get("model") or "", r["device"]))
        except (KeyError, TypeError, AttributeError) as e:
            raise CompileError(f"{path}: a row lacks or misspells field {e}: {str(r)[:200]}") from None
    return out


def _as_sample(r: Any) -> Sample:
    if isinstance(r, Sample):
        return r
    # a tuning.db.Row (one device's rows: all compared with the same default)
    return Sample(("", "", ""), r.signature, dict(r.config), bool(r.is_default), r.status, r.median_ms, r.model)


def targets(rows: Iterable[Any]) -> list[tuple[Sample, float]]:
    """(sample, target) for training: log(median_ms / the default's median_ms) of the same
    signature (and device, driver, compiler) for ok rows; slower_in_model rows (faster
    alone, not in the model) at least 0; build_error, wrong_output, timeout and crash rows
    log(FAILED_RATIO); compile_error rows and signatures without a measured default are
    dropped, and so are per-node choices (`loc:` rows: no kernel signature to learn from)."""
    samples = [s for s in map(_as_sample, rows) if not s.signature.startswith("loc:")]
    default: dict[tuple, float] = {}
    for s in samples:
        if s.is_default and s.status == "ok" and s.median_ms and s.median_ms > 0:
            default[(s.group, s.signature)] = s.median_ms
    out = []
    for s in samples:
        base = default.get((s.group, s.signature))
        if base is None:
            continue
        if s.status in ("ok", "slower_in_model") and s.median_ms and s.median_ms > 0:
            t = math.log(s.median_ms / base)
            out.append((s, max(t, 0.0) if s.status == "slower_in_model" else t))
        elif s.status in PENALIZED:
            out.append((s, math.log(FAILED_RATIO)))
    return out


def train(rows: Iterable[Any], *, profile: str, device_match: str, num_trees: int = NUM_TREES,
          params: dict[str, Any] | None = None, margin: float = MARGIN) -> CostModel:
    """A cost model from the rows of one device (`Sample`s, or `tuning.db.Row`s)."""
    import lightgbm as lgb

    data = targets(rows)
    if len(data) < 2:
        raise CompileError(f"cost model: {len(data)} usable rows (ok rows of signatures with a measured default); "
                           "nothing to train on")
    raw = [raw_features(s.signature, s.config) for s, _ in data]
    vocab: dict[str, list[str]] = {}
    names: set[str] = set()
    for r in raw:
        for name, value in r.items():
            names.add(name)
            if isinstance(value, tuple):
                vocab.setdefault(name, [])
                if value[1] not in vocab[name]:
                    vocab[name].append(value[1])
    vocab = {k: sorted(v) for k, v in sorted(vocab.items())}
    schema = sorted(names)
    index = {n: i for i, n in enumerate(schema)}
    x = np.full((len(data), len(schema)), math.nan)
    for row, (s, _) in enumerate(data):
        for name, value in features(s.signature, s.config, vocab).items():
            x[row, index[name]] = value
    y = np.array([t for _, t in data])
    p = {**TRAIN_PARAMS, **(params or {})}
    booster = lgb.train(p, lgb.Dataset(x, y, feature_name=schema, free_raw_data=False), num_boost_round=num_trees)
    models = sorted({s.model for s, _ in data if s.model})
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "profile": profile, "device_match": device_match,
           "target": "log(median_ms / default median_ms)", "failed_ratio": FAILED_RATIO, "margin": margin,
           "training_models": models, "rows": len(data), "signatures": len({s.signature for s, _ in data}),
           "params": p, "num_trees": num_trees, "schema": schema, "vocab": vocab,
           "booster": _slim(booster.dump_model())}
    model = CostModel(doc)
    model.booster = booster  # for tests (not in the artifact)
    model.train_x = x
    return model


_NODE_KEYS = ("split_feature", "threshold", "decision_type", "default_left", "missing_type", "left_child",
              "right_child", "leaf_value")


def _slim(dump: dict[str, Any]) -> dict[str, Any]:
    """`dump_model()` without the per-node training statistics (gains, counts, weights,
    internal values): what prediction reads, half the size."""

    def node(n: dict[str, Any]) -> dict[str, Any]:
        out = {k: n[k] for k in _NODE_KEYS if k in n}
        for k in ("left_child", "right_child"):
            if k in out:
                out[k] = node(out[k])
        return out

    return {**dump, "tree_info": [{**{k: v for k, v in t.items() if k != "tree_structure"},
                                   "tree_structure": node(t["tree_structure"])} for t in dump["tree_info"]]}


# --------------------------------------------------------------------------- evaluation


@dataclass
class Evaluation:
    signatures: int = 0
    """Signatures of the held-out models with a measured default (all could be evaluated:
    the choice is made among the measured configurations)."""
    changed: int = 0
    """Signatures where the model chose another configuration than the default."""
    failed: int = 0
    """... of which the chosen one failed (build_error, wrong_output, timeout, crash)."""
    vs_default: float = 1.0
    """Geomean of measured time of the chosen config / the default's (ok choices)."""
    vs_best: float = 1.0
    """Geomean of the chosen config's measured time / the best measured's."""
    best_vs_default: float = 1.0
    """Geomean of the best measured / the default's: what tuning got."""
    models: tuple[str, ...] = ()


def evaluate(model: CostModel, rows: Iterable[Any], models: Iterable[str] | None = None) -> Evaluation:
    """Offline: for each signature of the held-out models (`models`, else every model the
    artifact was not trained on; a signature any training model measured is left out),
    choose among its measured configurations as the pass would among its candidates, and
    compare the chosen one's measured time with the default's and the best's."""
    samples = [_as_sample(r) for r in rows]
    trained = set(model.training_models)
    wanted = set(models) if models is not None else None
    by_sig: dict[tuple, list[Sample]] = {}
    for s in samples:
        by_sig.setdefault((s.group, s.signature), []).append(s)
    ev = Evaluation()
    held: set[str] = set()
    logs_d, logs_b, logs_bd = [], [], []
    for (_, sig), group in sorted(by_sig.items(), key=lambda kv: kv[0]):
        names = {s.model for s in group}
        held_out = not (names & trained) if wanted is None else names <= wanted
        if not held_out:
            continue
        dflt = next((s for s in group if s.is_default and s.status == "ok" and s.median_ms), None)
        if dflt is None:
            continue
        cands = [s for s in group if not s.is_default and s.status != "compile_error"]
        ok = [s for s in group if s.status == "ok" and s.median_ms]
        best = min(s.median_ms for s in ok)
        chosen_cfg, _ = model.choose(sig, dflt.config, [s.config for s in cands])
        chosen = next((s for s in cands if s.config == chosen_cfg), dflt)
        ev.signatures += 1
        held |= names
        if chosen is not dflt:
            ev.changed += 1
        if chosen.status != "ok" or not chosen.median_ms:
            ev.failed += 1
            continue
        logs_d.append(math.log(chosen.median_ms / dflt.median_ms))
        logs_b.append(math.log(chosen.median_ms / best))
        logs_bd.append(math.log(best / dflt.median_ms))
    if logs_d:
        ev.vs_default = math.exp(sum(logs_d) / len(logs_d))
        ev.vs_best = math.exp(sum(logs_b) / len(logs_b))
        ev.best_vs_default = math.exp(sum(logs_bd) / len(logs_bd))
    ev.models = tuple(sorted(held))
    return ev


# --------------------------------------------------------------------------- CLI


def _load_samples(dbs: Sequence[str], exports: Sequence[str], device_match: str | None) -> list[Sample]:
    out: list[Sample] = []
    for p in dbs:
        if not Path(p).is_file():
            raise CompileError(f"tuning database {p} does not exist")
        out += samples_of_db(p)
    for p in exports:
        out += samples_of_export(p)
    if device_match:
        out = [s for s in out if device_match.lower() in s.device.lower()]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m adreno_mlir.tuning.cost_model", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train a cost model from tuning rows of one device")
    e = sub.add_parser("evaluate", help="leave-models-out: the measured effect of the model's choices")
    for p in (t, e):
        p.add_argument("--db", action="append", default=[], help="a tuning database (repeatable)")
        p.add_argument("--rows", action="append", default=[], help="an `adreno-mlir tune --export` file (repeatable)")
    t.add_argument("--device-match", required=True, help="rows whose device name holds this (case-insensitive)")
    t.add_argument("--profile", required=True, help="the target profile the model is for (e.g. nvidia-h200)")
    t.add_argument("--out", required=True, help="the artifact to write (JSON)")
    t.add_argument("--exclude-models", default="", help="comma-separated models to leave out (for evaluate)")
    t.add_argument("--trees", type=int, default=NUM_TREES)
    t.add_argument("--margin", type=float, default=MARGIN, help=f"choose's margin stored in the artifact ({MARGIN})")
    e.add_argument("--model", required=True, help="the artifact")
    e.add_argument("--models", default="", help="comma-separated held-out models (default: every model the "
                                                 "artifact was not trained on)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "train":
            samples = _load_samples(args.db, args.rows, args.device_match)
            excluded = {m for m in args.exclude_models.split(",") if m}
            samples = [s for s in samples if s.model not in excluded]
            devices = sorted({s.device for s in samples})
            if not samples:
                raise CompileError(f"no rows of a device matching {args.device_match!r}")
            model = train(samples, profile=args.profile, device_match=args.device_match, num_trees=args.trees,
                          margin=args.margin)
            model.doc["devices"] = devices
            model.save(args.out)
            print(f"trained on {model.rows} rows ({model.doc['signatures']} signatures, models "
                  f"{', '.join(model.training_models) or '-'}; devices {'; '.join(devices)}) -> {args.out}")
        else:
            model = load(args.model)
            samples = _load_samples(args.db, args.rows, model.device_match)
            models = [m for m in args.models.split(",") if m] or None
            ev = evaluate(model, samples, models)
            if not ev.signatures:
                print("no signature of a held-out model to evaluate (train with --exclude-models, or give --models)")
                return 1
            print(f"held-out models: {', '.join(ev.models) or '-'}")
            print(f"signatures evaluated: {ev.signatures} (choice changed {ev.changed}, chose a failed config "
                  f"{ev.failed})")
            print(f"geomean chosen / default: {ev.vs_default:.4f}")
            print(f"geomean chosen / best measured: {ev.vs_best:.4f}")
            print(f"geomean best measured / default (tuning): {ev.best_vs_default:.4f}")
    except CompileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
