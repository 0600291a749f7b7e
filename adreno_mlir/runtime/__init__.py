"""Runs lowered modules with pyopencl (PoCL on the CPU by default)."""

from adreno_mlir.runtime.device import default_context, describe_device
from adreno_mlir.runtime.executor import DeviceMemory, Executable

__all__ = ["DeviceMemory", "Executable", "default_context", "describe_device"]
