"""Rewrite-pattern passes over the graph and texture levels (and the registry of all
passes adreno-opt knows, lowering included)."""

from adreno_mlir.passes.fold_batchnorm import FoldBatchNorm
from adreno_mlir.passes.graph_canonicalize import GraphCanonicalize


def all_passes():
    from adreno_mlir.lowering.convert_graph_to_opencl import ConvertGraphToOpenCL

    from adreno_mlir.passes.annotate_texture_scope import AnnotateTextureScope
    from adreno_mlir.passes.convert_layout_nchw4c import ConvertLayoutNCHW4c
    from adreno_mlir.passes.conv_winograd import ConvWinograd
    from adreno_mlir.passes.fuse_attention import FuseAttentionPass
    from adreno_mlir.passes.fuse_channel_scale import FuseChannelScale
    from adreno_mlir.passes.fuse_depthwise_load import FuseDepthwiseLoad
    from adreno_mlir.passes.fuse_pool_partials import FusePoolPartials
    from adreno_mlir.passes.fuse_rms_norm import FuseRMSNorm
    from adreno_mlir.passes.graph_fuse import GraphFuse
    from adreno_mlir.passes.kv_cache_storage import KVCacheStorage
    from adreno_mlir.passes.merge_split_convs import MergeSplitConvsPass
    from adreno_mlir.passes.plan_memory import PlanMemory
    from adreno_mlir.passes.select_kernel_config import SelectKernelConfig
    from adreno_mlir.passes.split_k import SplitK

    return [GraphCanonicalize, MergeSplitConvsPass, FoldBatchNorm, FuseAttentionPass, FuseRMSNorm, KVCacheStorage, ConvertLayoutNCHW4c, ConvWinograd,
            AnnotateTextureScope, GraphFuse, FusePoolPartials, FuseChannelScale, FuseDepthwiseLoad, SelectKernelConfig,
            SplitK, PlanMemory, ConvertGraphToOpenCL]


__all__ = ["FoldBatchNorm", "GraphCanonicalize", "all_passes"]
