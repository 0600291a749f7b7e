// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' | filecheck %s --check-prefix=HOST
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' -t opencl | filecheck %s
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{target=pocl-cpu},convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=CPU

// Every reduction kind lowers through one kernel generator (ReduceSpec, kernels/pool.py):
// an accumulator starting at the kind's identity (0, 1, -INFINITY, INFINITY) combines
// each element's term (x, |x|, x * x) with the kind's operation (+, *, a NaN-propagating
// max/min helper), and a finishing step (sqrt, log, log(sum) + max) runs once before
// the fused epilogue and the store. select-kernel-config's `reduce_items` rule is the
// same for every kind (the extent decides; a hand-written config is kept): with
// reduce_items > 1 the partial results are combined in local memory with the kind's own
// operation (max for ReduceMax, * for ReduceProd). ReduceLogSumExp reads its elements
// twice: the maximum first (a work-group max shared by all work-items when grouped),
// clamped to +-FLT_MAX so that x - max is never inf - inf, then log(sum(exp(x - max))) + max.
// A reduction over no axes (ReduceSumSquare with noop_with_empty_axes) or of one element
// has no loop. graph.log_softmax is the softmax kernel with x - max - log(sum) as its
// last step. CPU targets keep serial loops (reduce_items = 1) except where the config
// was written by hand.

// Every reduction is a graph.fused region (ReduceMax with its relu; the others alone)
// carrying its config; the hand-written one on ReduceProd moves to its region.
// CONFIG:      %a = graph.fused {kernel_config = {reduce_items = 16 : i64}} -> tensor<2x3x1xf32> {
// CONFIG-NEXT:   graph.reduce_max %x {axes = array<i64: 2>}
// CONFIG-NEXT:   graph.relu
// CONFIG:      %b = graph.fused {kernel_config = {reduce_items = 1 : i64}} -> tensor<2x40xf32> {
// CONFIG-NEXT:   graph.reduce_min %x {axes = array<i64: 1>, keepdims = 0 : i64}
// CONFIG-NEXT:   graph.yield
// CONFIG:      %e = graph.fused {kernel_config = {reduce_items = 32 : i64}} -> tensor<3xf32> {
// CONFIG-NEXT:   graph.reduce_log_sum_exp %z {axes = array<i64: 1>, keepdims = 0 : i64}
// CONFIG-NEXT:   graph.yield
// CONFIG:      %f = graph.fused {kernel_config = {reduce_items = 16 : i64}} -> tensor<4x1x5xf32> {
// CONFIG-NEXT:   graph.reduce_prod %y {axes = array<i64: 1>}
// CONFIG-NEXT:   graph.yield
// CONFIG:      %g = graph.fused {kernel_config = {reduce_items = 1 : i64}} -> tensor<4x6x5xf32> {
// CONFIG-NEXT:   graph.reduce_sum_square %y {axes = array<i64>}
// CONFIG-NEXT:   graph.yield

// HOST-LABEL: func.func @main
// HOST:       opencl.launch @reduce_max_wg16_relu(%x, %a) global [16, 6] local [16, 1]
// HOST:       opencl.launch @reduce_min(%x, %b) global [80] :
// HOST:       opencl.launch @reduce_l2(%y, %c) global [20] :
// HOST:       opencl.launch @reduce_log_sum_exp(%y, %d) global [24] :
// HOST:       opencl.launch @reduce_log_sum_exp_wg32(%z, %e) global [32, 3] local [32, 1]
// HOST:       opencl.launch @reduce_prod_wg16(%y, %f) global [16, 20] local [16, 1]
// HOST:       opencl.launch @reduce_sum_square(%y, %g) global [120] :
// HOST:       opencl.launch @reduce_l1(%y, %h) global [24] :
// HOST:       opencl.launch @reduce_log_sum(%y, %i) global [6] :
// HOST:       opencl.launch @reduce_sum(%y, %j) global [4] :
// HOST:       opencl.launch @log_softmax_wg16(%x, %k) global [16, 6] local [16, 1]

// CHECK:       float adreno_fmax_float(float a, float b) { return select(a, b, (a < b) | isnan(b)); }
// CHECK:       float adreno_fmin_float(float a, float b)

// CHECK-LABEL: __kernel void reduce_max_wg16_relu(
// CHECK:           const int l = (int)get_local_id(0);
// CHECK-NEXT:      float [[ACC:v[0-9]+]] = -INFINITY;
// CHECK-NEXT:      for (int r = l; r < 40; r += 16) {
// CHECK-NEXT:          const float [[X:v[0-9]+]] = input[{{v[0-9]+}} + r];
// CHECK-NEXT:          [[ACC]] = adreno_fmax_float([[ACC]], [[X]]);
// CHECK-NEXT:      }
// CHECK-NEXT:      __local float partial[16];
// CHECK-NEXT:      partial[l] = [[ACC]];
// CHECK-NEXT:      barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:      if (l < 8) {
// CHECK-NEXT:          const float [[A:v[0-9]+]] = partial[l];
// CHECK-NEXT:          const float [[B:v[0-9]+]] = partial[l + 8];
// CHECK-NEXT:          partial[l] = adreno_fmax_float([[A]], [[B]]);
// CHECK-NEXT:      }
// CHECK-COUNT-3:   barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:           if (l == 0) {
// CHECK-NEXT:          const float [[S0:v[0-9]+]] = partial[0];
// CHECK-NEXT:          const float [[S1:v[0-9]+]] = partial[1];
// CHECK-NEXT:          out[i] = adreno_fmax_float(adreno_fmax_float([[S0]], [[S1]]), 0.0f);
// CHECK-NEXT:      }
// CHECK-NEXT:  }

// CHECK-LABEL: __kernel void reduce_min(
// CHECK:           float [[ACC:v[0-9]+]] = INFINITY;
// CHECK-NEXT:      for (int r = 0; r < 3; ++r) {
// CHECK-NEXT:          const float [[X:v[0-9]+]] = input[{{v[0-9]+}} + (r * 40)];
// CHECK-NEXT:          [[ACC]] = adreno_fmin_float([[ACC]], [[X]]);
// CHECK-NEXT:      }
// CHECK-NEXT:      out[i] = [[ACC]];

// CHECK-LABEL: __kernel void reduce_l2(
// CHECK:           float [[ACC:v[0-9]+]] = 0.0f;
// CHECK-NEXT:      for (int r = 0; r < 6; ++r) {
// CHECK-NEXT:          const float [[X:v[0-9]+]] = input[{{v[0-9]+}} + (r * 5)];
// CHECK-NEXT:          [[ACC]] = [[ACC]] + ([[X]] * [[X]]);
// CHECK-NEXT:      }
// CHECK-NEXT:      out[i] = sqrt([[ACC]]);

// CHECK-LABEL: __kernel void reduce_log_sum_exp(
// CHECK:           float [[MX:v[0-9]+]] = -INFINITY;
// CHECK-NEXT:      for (int r = 0; r < 5; ++r) {
// CHECK:               [[MX]] = adreno_fmax_float([[MX]], {{v[0-9]+}});
// CHECK:           const float [[M:v[0-9]+]] = adreno_fmin_float(adreno_fmax_float([[MX]], -3.40282347e+38f), 3.40282347e+38f);
// CHECK-NEXT:      float [[ACC:v[0-9]+]] = 0.0f;
// CHECK-NEXT:      for (int r_1 = 0; r_1 < 5; ++r_1) {
// CHECK-NEXT:          const float [[X:v[0-9]+]] = input[{{v[0-9]+}} + r_1];
// CHECK-NEXT:          [[ACC]] = [[ACC]] + exp([[X]] - [[M]]);
// CHECK-NEXT:      }
// CHECK-NEXT:      out[i] = log([[ACC]]) + [[M]];

// CHECK-LABEL: __kernel void reduce_log_sum_exp_wg32(
// CHECK:           for (int r = l; r < 64; r += 32) {
// CHECK:           __local float row_max[32];
// CHECK:               row_max[l] = adreno_fmax_float(
// CHECK-COUNT-5:   barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:      const float [[RM:v[0-9]+]] = row_max[0];
// CHECK-NEXT:      const float [[M:v[0-9]+]] = adreno_fmin_float(adreno_fmax_float([[RM]], -3.40282347e+38f), 3.40282347e+38f);
// CHECK:           for (int r_1 = l; r_1 < 64; r_1 += 32) {
// CHECK:               {{v[0-9]+}} = {{v[0-9]+}} + exp({{v[0-9]+}} - [[M]]);
// CHECK:           __local float partial[32];
// CHECK:           if ({{v[0-9]+}}) {
// CHECK:               partial[l] = {{v[0-9]+}} + {{v[0-9]+}};
// CHECK:               out[i] = log({{v[0-9]+}} + {{v[0-9]+}}) + [[M]];

// CHECK-LABEL: __kernel void reduce_prod_wg16(
// CHECK:           float [[ACC:v[0-9]+]] = 1.0f;
// CHECK-NEXT:      for (int r = l; r < 6; r += 16) {
// CHECK:               [[ACC]] = [[ACC]] * {{v[0-9]+}};
// CHECK:           __local float partial[16];
// CHECK:               partial[l] = {{v[0-9]+}} * {{v[0-9]+}};
// CHECK:               out[i] = {{v[0-9]+}} * {{v[0-9]+}};

// CHECK-LABEL: __kernel void reduce_sum_square(
// CHECK-NOT:       for
// CHECK:           const float [[X:v[0-9]+]] = input[
// CHECK-NEXT:      out[i] = [[X]] * [[X]];
// CHECK-NEXT:  }

// CHECK-LABEL: __kernel void reduce_l1(
// CHECK:               [[ACC:v[0-9]+]] = [[ACC]] + fabs({{v[0-9]+}});

// CHECK-LABEL: __kernel void reduce_log_sum(
// CHECK:           for (int r = 0; r < 20; ++r) {
// CHECK-NEXT:          const float {{v[0-9]+}} = input[{{v[0-9]+}} + (((r / 5) * 30) + (r % 5))];
// CHECK:           out[i] = log({{v[0-9]+}});

// CHECK-LABEL: __kernel void reduce_sum(
// CHECK:           for (int r = 0; r < 30; ++r) {
// CHECK:           out[i] = {{v[0-9]+}};

// CHECK-LABEL: __kernel void log_softmax_wg16(
// CHECK:           const float [[LS:v[0-9]+]] = log({{v[0-9]+}});
// CHECK:               out[{{v[0-9]+}}] = ({{v[0-9]+}} - {{v[0-9]+}}) - [[LS]];

// CPU-LABEL: __kernel void reduce_max_relu(
// CPU-NOT:       barrier
// CPU:           for (int r = 0; r < 40; ++r) {
// CPU-LABEL: __kernel void reduce_log_sum_exp(
// CPU-LABEL: __kernel void reduce_log_sum_exp_1(
// CPU-NOT:       barrier
// CPU:           for (int r = 0; r < 64; ++r) {
// CPU-LABEL: __kernel void reduce_prod_wg16(
// CPU:           barrier(CLK_LOCAL_MEM_FENCE);
// CPU-LABEL: __kernel void log_softmax(
// CPU-NOT:       barrier
// CPU:           out[{{v[0-9]+}}] = ({{v[0-9]+}} - {{v[0-9]+}}) - {{v[0-9]+}};

func.func @main(%x: tensor<2x3x40xf32>, %y: tensor<4x6x5xf32>, %z: tensor<3x64xf32>) -> (tensor<2x3x1xf32>, tensor<2x40xf32>, tensor<4x5xf32>, tensor<4x6xf32>, tensor<3xf32>, tensor<4x1x5xf32>, tensor<4x6x5xf32>, tensor<4x6xf32>, tensor<1x6x1xf32>, tensor<4x1x1xf32>, tensor<2x3x40xf32>) attributes {graph.inputs = ["x", "y", "z"], graph.outputs = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]} {
  %mx = graph.reduce_max %x {axes = array<i64: 2>} : (tensor<2x3x40xf32>) -> tensor<2x3x1xf32>
  %a = graph.relu %mx : tensor<2x3x1xf32>
  %b = graph.reduce_min %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x40xf32>) -> tensor<2x40xf32>
  %c = graph.reduce_l2 %y {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x6x5xf32>) -> tensor<4x5xf32>
  %d = graph.reduce_log_sum_exp %y {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<4x6x5xf32>) -> tensor<4x6xf32>
  %e = graph.reduce_log_sum_exp %z {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3x64xf32>) -> tensor<3xf32>
  %f = graph.reduce_prod %y {kernel_config = {reduce_items = 16 : i64}, axes = array<i64: 1>} : (tensor<4x6x5xf32>) -> tensor<4x1x5xf32>
  %g = graph.reduce_sum_square %y {axes = array<i64>} : (tensor<4x6x5xf32>) -> tensor<4x6x5xf32>
  %h = graph.reduce_l1 %y {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<4x6x5xf32>) -> tensor<4x6xf32>
  %i = graph.reduce_log_sum %y {axes = array<i64: 0, 2>} : (tensor<4x6x5xf32>) -> tensor<1x6x1xf32>
  %j = graph.reduce_sum %y {axes = array<i64: 1, 2>} : (tensor<4x6x5xf32>) -> tensor<4x1x1xf32>
  %k = graph.log_softmax %x {axis = 2 : i64} : tensor<2x3x40xf32>
  func.return %a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k : tensor<2x3x1xf32>, tensor<2x40xf32>, tensor<4x5xf32>, tensor<4x6xf32>, tensor<3xf32>, tensor<4x1x5xf32>, tensor<4x6x5xf32>, tensor<4x6xf32>, tensor<1x6x1xf32>, tensor<4x1x1xf32>, tensor<2x3x40xf32>
}
