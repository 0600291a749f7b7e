"""Rewrite-pattern passes over the graph and texture levels (and the registry of all
passes adreno-opt knows, lowering included)."""

from passes.fold_batchnorm import FoldBatchNorm
from passes.graph_canonicalize import GraphCanonicalize


def all_passes():
    from lowering.convert_graph_to_opencl import ConvertGraphToOpenCL

    return [GraphCanonicalize, FoldBatchNorm, ConvertGraphToOpenCL]


__all__ = ["FoldBatchNorm", "GraphCanonicalize", "all_passes"]
