// RUN: adreno-opt %s -t opencl | filecheck %s

builtin.module {
  // A dot product per work-item: loop with an accumulating iter_arg, loads and a store.
  opencl.kernel @row_dot(%a: !opencl.ptr<global, f32>, %b: !opencl.ptr<global, f32>,
                         %out: !opencl.ptr<global, f32>, %n: i32) {
    %row = opencl.global_id 0
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.000000e+00 : f32
    %base = arith.muli %row, %n : i32
    %acc = scf.for %k = %c0 to %n step %c1 iter_args(%sum = %zero) -> (f32) : i32 {
      %idx = arith.addi %base, %k : i32
      %x = opencl.load %a[%idx] : !opencl.ptr<global, f32>
      %y = opencl.load %b[%k] : !opencl.ptr<global, f32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %sum, %p : f32
      scf.yield %s : f32
    }
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.maximumf %acc, %ninf : f32
    opencl.store %r, %out[%row] : !opencl.ptr<global, f32>
    opencl.return
  }

  // Image read/write with a select and an scf.if producing a value.
  opencl.kernel @relu_img(%in: !opencl.image2d<read>, %out: !opencl.image2d<write>, %alpha: f32) {
    %x = opencl.global_id 0
    %y = opencl.global_id 1
    %v = opencl.read_imagef %in[%x, %y] : vector<4xf32>
    %z = arith.constant dense<0.000000e+00> : vector<4xf32>
    %m = arith.maximumf %v, %z : vector<4xf32>
    %c0 = arith.constant 0 : i32
    %first = arith.cmpi eq, %x, %c0 : i32
    %w = scf.if %first -> (vector<4xf32>) {
      %sa = opencl.vec_splat %alpha : vector<4xf32>
      %mm = arith.mulf %m, %sa : vector<4xf32>
      scf.yield %mm : vector<4xf32>
    } else {
      scf.yield %m : vector<4xf32>
    }
    opencl.write_imagef %out[%x, %y], %w : vector<4xf32>
    opencl.return
  }
}

// CHECK:      #pragma OPENCL FP_CONTRACT OFF
// CHECK:      __constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
// arith.maximumf is NaN-propagating; OpenCL's fmax is not: one helper per type used.
// CHECK:      // max/min that propagate NaN (arith.maximumf/minimumf); OpenCL's fmax/fmin drop it
// CHECK-NEXT: float adreno_fmax_float(float a, float b) { return select(a, b, (a < b) | isnan(b)); }
// CHECK-NEXT: float4 adreno_fmax_float4(float4 a, float4 b) { return select(a, b, (a < b) | isnan(b)); }
// CHECK-LABEL: __kernel void row_dot(
// CHECK-NEXT:      __global const float* a,
// CHECK-NEXT:      __global const float* b,
// CHECK-NEXT:      __global float* out,
// CHECK-NEXT:      int n
// CHECK-NEXT:  ) {
// CHECK-NEXT:      const int row = (int)get_global_id(0);
// CHECK-NEXT:      const int base = row * n;
// CHECK-NEXT:      float sum = 0.0f;
// CHECK-NEXT:      for (int k = 0; k < n; ++k) {
// CHECK-NEXT:          const float x = a[base + k];
// CHECK-NEXT:          const float y = b[k];
// CHECK-NEXT:          sum = sum + (x * y);
// CHECK-NEXT:      }
// CHECK-NEXT:      out[row] = adreno_fmax_float(sum, -INFINITY);
// CHECK-NEXT:  }

// CHECK-LABEL: __kernel void relu_img(__read_only image2d_t in, __write_only image2d_t out, float alpha) {
// CHECK-NEXT:      const int x = (int)get_global_id(0);
// CHECK-NEXT:      const int y = (int)get_global_id(1);
// CHECK-NEXT:      const float4 v = read_imagef(in, smp, (int2)(x, y));
// CHECK-NEXT:      const float4 m = adreno_fmax_float4(v, (float4)(0.0f));
// CHECK-NEXT:      float4 w;
// CHECK-NEXT:      if (x == 0) {
// CHECK-NEXT:          w = m * (float4)(alpha);
// CHECK-NEXT:      } else {
// CHECK-NEXT:          w = m;
// CHECK-NEXT:      }
// CHECK-NEXT:      write_imagef(out, (int2)(x, y), w);
// CHECK-NEXT:  }
