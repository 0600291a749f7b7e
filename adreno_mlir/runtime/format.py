"""Names of the compiled-model artifact format (docs/artifact.md) that its writer
(adreno_mlir.artifact) and its readers share: the `format` value of manifest.json and
the file names inside an `X.adreno/` directory. The native runtime's in-memory manifest
(adreno_mlir.runtime.native) uses them too, so the runtime needs nothing from the
artifact writer; runtime/c/src/adreno_rt.c spells FORMAT_NAME in C.

The format versions, and which version a plan needs, stay with the writer and loader
(adreno_mlir.artifact: FORMAT_VERSION, READ_VERSIONS, format_version_of)."""

from __future__ import annotations

FORMAT_NAME = "adreno-mlir-artifact"
"""manifest.json's `format`: what makes a directory an artifact of this project."""

MANIFEST = "manifest.json"
SOURCE_FILE = "kernels.cl"
WEIGHTS_FILE = "weights.bin"
BINARIES_DIR = "binaries"

__all__ = ["BINARIES_DIR", "FORMAT_NAME", "MANIFEST", "SOURCE_FILE", "WEIGHTS_FILE"]
