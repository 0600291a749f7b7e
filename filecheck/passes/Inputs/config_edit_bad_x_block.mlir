// Input of ../config_edit.mlir (ERR): x_block = 7 is not a blocking the NCHW4c conv
// kernel has (1-4).
func.func @bad_x_block(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<2x8x3x3x4xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, kernel_config = {x_block = 7 : i64, co_blocks = 1 : i64, split_k = 1 : i64}} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> loc("edited_conv")
  func.return %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}
