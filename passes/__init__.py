"""Rewrite-pattern passes over the graph and texture levels."""

from passes.graph_canonicalize import GraphCanonicalize

ALL_PASSES = [GraphCanonicalize]

__all__ = ["ALL_PASSES", "GraphCanonicalize"]
