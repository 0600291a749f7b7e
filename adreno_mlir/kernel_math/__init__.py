"""Kernel math shared by the passes and the lowering: what a kernel computes and how it
reads its operands, independent of how a kernel is built (`matmul`: the geometry of a
strided matrix product; `winograd`: the F(m, 3) transform matrices and the filter
transform). Both `passes/` and `lowering/` import it; it imports neither."""
