from adreno_mlir.frontend.onnx_importer import FrontendError, import_onnx, load_model
from adreno_mlir.frontend.shapes import bind_input_shapes

__all__ = ["FrontendError", "bind_input_shapes", "import_onnx", "load_model"]
