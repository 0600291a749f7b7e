"""Matrix products: ONNX Gemm (2-D, optional transposes, alpha, beta * C via the
epilogue) and batched MatMul with broadcasting batch dimensions. One work-item per
output element; grid (N, M[, batch]).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, numel


@dataclass(frozen=True)
class GemmSpec(KernelSpec):
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    alpha: float

    def base_name(self) -> str:
        return f"gemm{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("a", "b")

    def global_size(self) -> tuple[int, ...]:
        return (self.n, self.m)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (a, b), extras, out = self.split_args(args)
        col, row = kb.global_id(0, "col"), kb.global_id(1, "row")
        m, n, k = self.m, self.n, self.k

        def step(kb1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            ia = kb1.add(kb1.mul(kk, m), row) if self.trans_a else kb1.add(kb1.mul(row, k), kk)
            ib = kb1.add(kb1.mul(col, k), kk) if self.trans_b else kb1.add(kb1.mul(kk, n), col)
            return [kb1.fma(kb1.load(a, ia), kb1.load(b, ib), acc[0])]

        (acc,) = kb.for_(0, k, 1, [kb.f(0.0)], step, "kk")
        if self.alpha != 1.0:
            acc = kb.fmul(acc, self.alpha)
        value = self.epilogue.apply(kb, acc, [row, col], extras)
        kb.store(value, out, kb.add(kb.mul(row, n), col))


@dataclass(frozen=True)
class MatMulSpec(KernelSpec):
    """out[b, m, n] = sum_k A[b, m, k] * B[b, k, n]; batch strides may be 0 (broadcast)."""

    batch: tuple[int, ...]
    a_batch_strides: tuple[int, ...]
    b_batch_strides: tuple[int, ...]
    m: int
    n: int
    k: int

    def base_name(self) -> str:
        return "matmul"

    def input_names(self) -> tuple[str, ...]:
        return ("a", "b")

    def global_size(self) -> tuple[int, ...]:
        return (self.n, self.m, max(1, numel(self.batch)))

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (a, b), _, out = self.split_args(args)
        col, row, z = kb.global_id(0, "col"), kb.global_id(1, "row"), kb.global_id(2, "z")
        bc = kb.unravel(z, self.batch) if self.batch else []
        a_base = kb.linear(bc, self.a_batch_strides) if self.batch else kb.i(0)
        b_base = kb.linear(bc, self.b_batch_strides) if self.batch else kb.i(0)
        m, n, k = self.m, self.n, self.k
        a_row = kb.add(a_base, kb.mul(row, k))
        b_col = kb.add(b_base, col)

        def step(kb1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            return [kb1.fma(kb1.load(a, kb1.add(a_row, kk)), kb1.load(b, kb1.add(b_col, kb1.mul(kk, n))), acc[0])]

        (acc,) = kb.for_(0, k, 1, [kb.f(0.0)], step, "kk")
        kb.store(acc, out, kb.add(kb.mul(kb.add(kb.mul(z, m), row), n), col))
