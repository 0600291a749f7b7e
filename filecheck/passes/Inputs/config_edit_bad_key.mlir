// Input of ../config_edit.mlir (KEY): a misspelt key on a fused region's config; the
// error names the region's head op.
func.func @bad_key(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %r = graph.fused {kernel_config = {kernel = "vec4", xblock = 2 : i64}} -> tensor<1x8x6x6xf32> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32> loc("fused_conv")
    %a = graph.relu %c : tensor<1x8x6x6xf32>
    graph.yield %a : tensor<1x8x6x6xf32>
  }
  func.return %r : tensor<1x8x6x6xf32>
}
