// tile_n = 4 on a matmul whose B is read transposed (column stride K = 16, N % 4 == 0):
// float4 rows of B do not exist, the lowering refuses (convert_matmul_strided.mlir).
func.func @scores(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32> {
  %s = graph.matmul %q, %k {rhs_perm = array<i64: 0, 1, 3, 2>, kernel_config = {k_split = 1 : i64, tile_m = 1 : i64, tile_n = 4 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32> loc("scores")
  func.return %s : tensor<1x2x8x8xf32>
}
