"""ONNX Einsum as graph ops: transposes, reshapes, batched matmuls, multiplies, sums, gathers.

The graph dialect has no einsum op; the importer writes each equation out in ops that
already have kernels, so attention's `bhid,bhjd->bhij` is a transpose of k and one
batched matmul, and nothing new needs a lowering. Every label of the equation is
classified per pair of operands:

- batch: in both operands and needed later (in the output or a later operand),
- contracted: in both operands, needed nowhere else (summed by the matmul),
- left-free / right-free: in one operand of the pair only.

Each operand is transposed to [batch..., free..., contracted...] (the right one to
[batch..., contracted..., free...]), reshaped to 3-D [batch, M, K] / [batch, K, N]
(2-D without batch labels), multiplied with `graph.matmul`, and reshaped back to
[batch..., left-free..., right-free...]; a final transpose gives the output order. Pairs
without contracted labels (outer and Hadamard products) are a broadcasting `graph.mul`
instead. More than two operands are contracted left to right, pair by pair.

Before the pairs, each operand is made to have each label once and only labels that
matter beyond it:

- a repeated label (`ii->i`, a diagonal) becomes one `graph.gather` of the diagonal
  elements (evenly spaced, so graph-canonicalize turns it into a strided slice);
- labels in this operand only and not in the output (`ij->i`) are summed by one
  `graph.reduce_sum` over their axes.

The equation grammar is ONNX's (numpy's): letters a-z and A-Z, an optional `...` per
term (broadcasting dimensions, right-aligned across operands; dimensions of size 1
broadcast), an optional `->` output; without it the output is the ellipsis dimensions
followed by the labels used exactly once, in ASCII order. A letter must have the same
size everywhere it appears (numpy would broadcast a size-1 letter, but ONNX's shape
inference gives such a node the wrong output shape).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType, f32
from xdsl.ir import Operation, SSAValue

from adreno_mlir.dialects import graph


class EinsumError(ValueError):
    """The equation is malformed or does not fit the operands; the importer names the node."""


_TERM = re.compile(r"(?:[A-Za-z]|\.\.\.)*")
_TOKEN = re.compile(r"[A-Za-z]|\.\.\.")


def _ellipsis_label(i: int) -> str:
    """Label of the i-th broadcasting dimension (counted from the left of the widest
    ellipsis); never a letter, so it cannot clash with the equation's labels."""
    return f"...{i}"


def parse_equation(equation: str, ranks: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """The label list of each operand and of the output, `...` expanded into
    per-dimension labels. Raises EinsumError for anything malformed."""
    eq = re.sub(r"\s+", "", equation)
    if eq.count("->") > 1:
        raise EinsumError("has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise EinsumError(f"has {len(terms)} input term(s) for {len(ranks)} input(s)")
    for t in terms + ([rhs] if arrow else []):
        if not _TERM.fullmatch(t) or t.count("...") > 1:
            raise EinsumError(f"term '{t}' is not letters with at most one '...'")
    tokens = [_TOKEN.findall(t) for t in terms]
    widths = []
    for i, (toks, rank) in enumerate(zip(tokens, ranks)):
        letters = len([t for t in toks if t != "..."])
        width = rank - letters
        if width < 0 or ("..." not in toks and width != 0):
            raise EinsumError(f"term '{terms[i]}' has {letters} label(s) but input {i} has rank {rank}")
        widths.append(width)
    ell = max(widths, default=0)
    labels = []
    for toks, width in zip(tokens, widths):
        out: list[str] = []
        for t in toks:
            out += [_ellipsis_label(ell - width + j) for j in range(width)] if t == "..." else [t]
        labels.append(out)
    ell_labels = [_ellipsis_label(j) for j in range(ell)]
    if arrow:
        out_tokens = _TOKEN.findall(rhs)
        if ell and "..." not in out_tokens:
            raise EinsumError("the inputs have '...' but the output does not (numpy and onnxruntime refuse this)")
        output: list[str] = []
        for t in out_tokens:
            output += ell_labels if t == "..." else [t]
    else:
        letters = [t for toks in tokens for t in toks if t != "..."]
        output = ell_labels + sorted(t for t in set(letters) if letters.count(t) == 1)
    if len(set(output)) != len(output):
        raise EinsumError(f"output '{rhs}' repeats a label")
    used = {label for ls in labels for label in ls}
    missing = [label for label in output if label not in used]
    if missing:
        raise EinsumError(f"output labels {missing} appear in no input")
    return labels, output


@dataclass
class Term:
    """A value and the label of each of its dimensions."""

    value: SSAValue
    labels: list[str]

    @property
    def shape(self) -> tuple[int, ...]:
        return graph.shape_of(self.value)


class EinsumBuilder:
    """Writes one einsum out in graph ops; `emit(op)` inserts an op and returns its result."""

    def __init__(self, emit: Callable[[Operation], SSAValue]):
        self.emit = emit

    # ------------------------------------------------------------------ single ops

    def transpose(self, t: Term, labels: list[str]) -> Term:
        perm = [t.labels.index(label) for label in labels]
        if perm == list(range(len(perm))):
            return Term(t.value, labels)
        shape = [t.shape[p] for p in perm]
        op = graph.TransposeOp(operands=[t.value], result_types=[TensorType(f32, shape)],
                               properties={"perm": graph.i64_array(perm)})
        return Term(self.emit(op), labels)

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == graph.shape_of(v):
            return v
        return self.emit(graph.ReshapeOp(operands=[v], result_types=[TensorType(f32, list(shape))]))

    def matmul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        shape = graph.matmul_shape(graph.shape_of(a), graph.shape_of(b))
        return self.emit(graph.MatMulOp(operands=[a, b], result_types=[TensorType(f32, list(shape))]))

    # ------------------------------------------------------------------ steps

    def broadcast_squeeze(self, t: Term, sizes: dict[str, int]) -> Term:
        """Drop the size-1 dimensions of labels that are larger elsewhere (broadcasting
        `...` dimensions): the other operand's extent then needs no expansion."""
        keep = [i for i, label in enumerate(t.labels) if not (t.shape[i] == 1 and sizes[label] > 1)]
        if len(keep) == len(t.labels):
            return t
        return Term(self.reshape(t.value, [t.shape[i] for i in keep]), [t.labels[i] for i in keep])

    def diagonal(self, t: Term) -> Term:
        """Each repeated label once: the diagonal elements, gathered along one axis
        after moving the repeated dimensions last and flattening them."""
        counts = {label: t.labels.count(label) for label in t.labels}
        if all(c == 1 for c in counts.values()):
            return t
        single = [i for i, label in enumerate(t.labels) if counts[label] == 1]
        repeated = [i for i, label in enumerate(t.labels) if counts[label] > 1]
        moved = self.transpose(Term(t.value, [str(i) for i in range(len(t.labels))]),
                               [str(i) for i in single + repeated])
        outer = [t.shape[i] for i in single]
        inner = [t.shape[i] for i in repeated]
        flat = self.reshape(moved.value, [math.prod(outer), math.prod(inner)])
        uniq = list(dict.fromkeys(t.labels[i] for i in repeated))
        sizes = [t.shape[t.labels.index(label)] for label in uniq]
        grid = np.indices(sizes, dtype=np.int64)
        strides = [math.prod(inner[q + 1:]) for q in range(len(inner))]
        index = sum(grid[uniq.index(t.labels[i])] * s for i, s in zip(repeated, strides))
        gathered = self.emit(graph.GatherOp(
            operands=[flat], result_types=[TensorType(f32, [math.prod(outer), *sizes])],
            properties={"axis": IntegerAttr(1, 64), "indices": graph.i64_array(np.ravel(index).tolist()),
                        "indices_shape": graph.i64_array(sizes)}))
        return Term(self.reshape(gathered, outer + sizes), [t.labels[i] for i in single] + uniq)

    def sum_labels(self, t: Term, summed: set[str]) -> Term:
        """Sum over the labels `summed` (one reduce_sum, the other labels keep their order)."""
        axes = [i for i, label in enumerate(t.labels) if label in summed]
        if not axes:
            return t
        rest = [i for i, label in enumerate(t.labels) if label not in summed]
        op = graph.ReduceSumOp(operands=[t.value], result_types=[TensorType(f32, [t.shape[i] for i in rest])],
                               properties={"axes": graph.i64_array(axes), "keepdims": IntegerAttr(0, 64)})
        return Term(self.emit(op), [t.labels[i] for i in rest])

    def contract(self, a: Term, b: Term, keep: set[str]) -> Term:
        """The product of a pair, summed over the labels in both and not in `keep`."""
        batch = [label for label in a.labels if label in b.labels and label in keep]
        summed = [label for label in a.labels if label in b.labels and label not in keep]
        left = [label for label in a.labels if label not in b.labels]
        right = [label for label in b.labels if label not in a.labels]
        size = dict(zip(a.labels, a.shape)) | dict(zip(b.labels, b.shape))
        dims = [size[label] for label in batch]
        fm = [size[label] for label in left]
        fn = [size[label] for label in right]
        labels = batch + left + right
        if not summed:  # outer / Hadamard product: broadcasting multiply
            av = self.reshape(self.transpose(a, batch + left).value, dims + fm + [1] * len(fn))
            bv = self.reshape(self.transpose(b, batch + right).value, dims + [1] * len(fm) + fn)
            shape = graph.broadcast_shapes(graph.shape_of(av), graph.shape_of(bv))
            return Term(self.emit(graph.MulOp(av, bv, TensorType(f32, list(shape)))), labels)
        k = math.prod(size[label] for label in summed)
        lead = [math.prod(dims)] if batch else []
        av = self.reshape(self.transpose(a, batch + left + summed).value, lead + [math.prod(fm), k])
        bv = self.reshape(self.transpose(b, batch + summed + right).value, lead + [k, math.prod(fn)])
        return Term(self.reshape(self.matmul(av, bv), dims + fm + fn), labels)

    # ------------------------------------------------------------------ the whole equation

    def build(self, equation: str, values: Sequence[SSAValue]) -> SSAValue:
        shapes = [graph.shape_of(v) for v in values]
        labels, output = parse_equation(equation, [len(s) for s in shapes])
        sizes: dict[str, int] = {}
        for i, (ls, shape) in enumerate(zip(labels, shapes)):
            seen: dict[str, int] = {}
            for label, d in zip(ls, shape):
                if label in seen and seen[label] != d:
                    raise EinsumError(f"label '{label}' has sizes {seen[label]} and {d} in input {i}")
                seen[label] = d
                old = sizes.get(label, d)
                if old != d and (label[0] != "." or 1 not in (old, d)):
                    what = "a '...' dimension" if label[0] == "." else f"label '{label}'"
                    raise EinsumError(f"{what} has sizes {old} and {d}: they must be equal"
                                      + (" or 1" if label[0] == "." else ""))
                sizes[label] = max(old, d)
        terms = [self.diagonal(self.broadcast_squeeze(Term(v, ls), sizes)) for v, ls in zip(values, labels)]
        for i, t in enumerate(terms):
            elsewhere = set(output).union(*(u.labels for j, u in enumerate(terms) if j != i))
            terms[i] = self.sum_labels(t, set(t.labels) - elsewhere)
        acc = terms[0]
        for j in range(1, len(terms)):
            keep = set(output).union(*(u.labels for u in terms[j + 1:]))
            acc = self.contract(acc, terms[j], keep)
        # Every output label survives each step (never summed), and every other label was
        # summed by the last step that saw it: the labels left are the output's.
        assert sorted(acc.labels) == sorted(output), (acc.labels, output)
        return self.transpose(acc, output).value
