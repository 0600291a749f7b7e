// Input of ../config_edit.mlir (NOSPLIT): a split_k = 2 edit lowered without the split-k pass.
func.func @late_conv(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x1x1x4xf32>
  %c = graph.conv2d %x, %w {kernel_config = {split_k = 2 : i64}} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> loc("late_conv")
  func.return %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}
