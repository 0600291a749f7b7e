from adreno_mlir.frontend.onnx_importer import FrontendError, import_onnx, load_model

__all__ = ["FrontendError", "import_onnx", "load_model"]
