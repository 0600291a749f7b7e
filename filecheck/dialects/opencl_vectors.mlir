// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt -t opencl | filecheck %s --check-prefix=OCL
// RUN: sed -e '/^\/\/ PARSE ERRORS/,$d' %s | adreno-opt --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ERR
// RUN: sed -n '/^\/\/ BEGIN NOT-A-VECTOR/,/^\/\/ END/p' %s | not adreno-opt 2>&1 | filecheck %s --check-prefix=NOTVEC
// RUN: sed -n '/^\/\/ BEGIN LEGACY-EXTRACT/,/^\/\/ END/p' %s | not adreno-opt 2>&1 | filecheck %s --check-prefix=LEGACY
// RUN: sed -n '/^\/\/ BEGIN WRONG-ELEMENT/,/^\/\/ END/p' %s | not adreno-opt 2>&1 | filecheck %s --check-prefix=ELEMENT
// RUN: sed -n '/^\/\/ BEGIN EXTRACT-FROM/,/^\/\/ END/p' %s | not adreno-opt 2>&1 | filecheck %s --check-prefix=FROM

// opencl.vload / opencl.vstore (2, 4, 8 or 16 lanes at an ELEMENT offset, printed
// `vloadN(0, ptr + off)` / `vstoreN(v, 0, ptr + off)`) and the floatN / halfN forms of
// opencl.vec_splat, opencl.vec_make and opencl.vec_extract.
// The first chunk round-trips (parse, print, parse again, print the same text) and
// prints as OpenCL C; the chunks after it must fail to verify with the messages below;
// the last ones (after PARSE ERRORS) must fail to parse.

builtin.module {
  // CHECK-LABEL: opencl.kernel @widths(%p: !opencl.ptr<global, f32>, %h: !opencl.ptr<global, f16>, %c: !opencl.ptr<constant, f32>, %q: !opencl.ptr<local, f32>, %off: i32) {
  opencl.kernel @widths(%p: !opencl.ptr<global, f32>, %h: !opencl.ptr<global, f16>,
                        %c: !opencl.ptr<constant, f32>, %q: !opencl.ptr<local, f32>, %off: i32) {
    // CHECK-NEXT: %v2 = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<2xf32>
    // CHECK-NEXT: %v4 = opencl.vload %c[%off] : !opencl.ptr<constant, f32> -> vector<4xf32>
    // CHECK-NEXT: %v8 = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<8xf32>
    // CHECK-NEXT: %v16 = opencl.vload %q[%off] : !opencl.ptr<local, f32> -> vector<16xf32>
    // CHECK-NEXT: %h2 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<2xf16>
    // CHECK-NEXT: %h8 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<8xf16>
    // CHECK-NEXT: %h16 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<16xf16>
    %v2 = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<2xf32>
    %v4 = opencl.vload %c[%off] : !opencl.ptr<constant, f32> -> vector<4xf32>
    %v8 = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<8xf32>
    %v16 = opencl.vload %q[%off] : !opencl.ptr<local, f32> -> vector<16xf32>
    %h2 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<2xf16>
    %h8 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<8xf16>
    %h16 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<16xf16>
    // CHECK-NEXT: opencl.vstore %v2, %p[%off] : vector<2xf32>, !opencl.ptr<global, f32>
    // CHECK-NEXT: opencl.vstore %v4, %q[%off] : vector<4xf32>, !opencl.ptr<local, f32>
    // CHECK-NEXT: opencl.vstore %v8, %p[%off] : vector<8xf32>, !opencl.ptr<global, f32>
    // CHECK-NEXT: opencl.vstore %v16, %p[%off] {tag} : vector<16xf32>, !opencl.ptr<global, f32>
    // CHECK-NEXT: opencl.vstore %h2, %h[%off] : vector<2xf16>, !opencl.ptr<global, f16>
    // CHECK-NEXT: opencl.vstore %h8, %h[%off] : vector<8xf16>, !opencl.ptr<global, f16>
    // CHECK-NEXT: opencl.vstore %h16, %h[%off] : vector<16xf16>, !opencl.ptr<global, f16>
    opencl.vstore %v2, %p[%off] : vector<2xf32>, !opencl.ptr<global, f32>
    opencl.vstore %v4, %q[%off] : vector<4xf32>, !opencl.ptr<local, f32>
    opencl.vstore %v8, %p[%off] : vector<8xf32>, !opencl.ptr<global, f32>
    opencl.vstore %v16, %p[%off] {tag} : vector<16xf32>, !opencl.ptr<global, f32>
    opencl.vstore %h2, %h[%off] : vector<2xf16>, !opencl.ptr<global, f16>
    opencl.vstore %h8, %h[%off] : vector<8xf16>, !opencl.ptr<global, f16>
    opencl.vstore %h16, %h[%off] : vector<16xf16>, !opencl.ptr<global, f16>
    // CHECK-NEXT: opencl.return
    opencl.return
  }

  // CHECK-LABEL: opencl.kernel @lanes(%p: !opencl.ptr<global, f32>, %h: !opencl.ptr<global, f16>, %out: !opencl.ptr<global, f32>, %off: i32, %a: f32) {
  opencl.kernel @lanes(%p: !opencl.ptr<global, f32>, %h: !opencl.ptr<global, f16>,
                       %out: !opencl.ptr<global, f32>, %off: i32, %a: f32) {
    // CHECK-NEXT: %c8 = arith.constant 8 : i32
    // CHECK-NEXT: %o = arith.addi %off, %c8 : i32
    // CHECK-NEXT: %v16 = opencl.vload %p[%o] : !opencl.ptr<global, f32> -> vector<16xf32>
    // CHECK-NEXT: %b = opencl.load %h[%off] : !opencl.ptr<global, f16>
    %c8 = arith.constant 8 : i32
    %o = arith.addi %off, %c8 : i32
    %v16 = opencl.vload %p[%o] : !opencl.ptr<global, f32> -> vector<16xf32>
    %b = opencl.load %h[%off] : !opencl.ptr<global, f16>
    // CHECK-NEXT: %s8 = opencl.vec_splat %a : vector<8xf32>
    // CHECK-NEXT: %s16 = opencl.vec_splat %b : vector<16xf16>
    // CHECK-NEXT: %m8 = opencl.vec_make %a, %a, %a, %a, %a, %a, %a, %a : vector<8xf32>
    // CHECK-NEXT: %m16 = opencl.vec_make %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a : vector<16xf32>
    %s8 = opencl.vec_splat %a : vector<8xf32>
    %s16 = opencl.vec_splat %b : vector<16xf16>
    %m8 = opencl.vec_make %a, %a, %a, %a, %a, %a, %a, %a : vector<8xf32>
    %m16 = opencl.vec_make %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a : vector<16xf32>
    // CHECK-NEXT: %e7 = opencl.vec_extract %m8[7] : f32 from vector<8xf32>
    // CHECK-NEXT: %e10 = opencl.vec_extract %v16[10] : f32 from vector<16xf32>
    // CHECK-NEXT: %e15 = opencl.vec_extract %m16[15] : f32 from vector<16xf32>
    // CHECK-NEXT: %hb = opencl.vec_extract %s16[11] : f16 from vector<16xf16>
    %e7 = opencl.vec_extract %m8[7] : f32 from vector<8xf32>
    %e10 = opencl.vec_extract %v16[10] : f32 from vector<16xf32>
    %e15 = opencl.vec_extract %m16[15] : f32 from vector<16xf32>
    %hb = opencl.vec_extract %s16[11] : f16 from vector<16xf16>
    // Without `from`, the vector is a float4 / half4 (IR written before the wider forms).
    // CHECK-NEXT: %v4 = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<4xf32>
    // CHECK-NEXT: %l3 = opencl.vec_extract %v4[3] : f32 from vector<4xf32>
    // CHECK-NEXT: %hv4 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<4xf16>
    // CHECK-NEXT: %hl1 = opencl.vec_extract %hv4[1] : f16 from vector<4xf16>
    %v4 = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<4xf32>
    %l3 = opencl.vec_extract %v4[3] : f32
    %hv4 = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<4xf16>
    %hl1 = opencl.vec_extract %hv4[1] : f16
    %hf = arith.extf %hb : f16 to f32
    %hf1 = arith.extf %hl1 : f16 to f32
    %t0 = arith.addf %e10, %e15 : f32
    %t1 = arith.addf %t0, %e7 : f32
    %t2 = arith.addf %t1, %hf : f32
    %t3 = arith.addf %t2, %l3 : f32
    %t4 = arith.addf %t3, %hf1 : f32
    opencl.store %t4, %out[%off] : !opencl.ptr<global, f32>
    %sum = arith.addf %m8, %s8 : vector<8xf32>
    opencl.vstore %sum, %out[%o] : vector<8xf32>, !opencl.ptr<global, f32>
    opencl.vstore %s16, %h[%o] : vector<16xf16>, !opencl.ptr<global, f16>
    opencl.return
  }

  // Packed i32 words (a quantized weight's block) read as an int4 / int16 and taken apart.
  // CHECK-LABEL: opencl.kernel @words(%w: !opencl.ptr<global, i32>, %out: !opencl.ptr<global, i32>, %off: i32) {
  // CHECK-NEXT:    %w4 = opencl.vload %w[%off] : !opencl.ptr<global, i32> -> vector<4xi32>
  // CHECK-NEXT:    %w16 = opencl.vload %w[%off] : !opencl.ptr<global, i32> -> vector<16xi32>
  // CHECK-NEXT:    %x = opencl.vec_extract %w4[3] : i32 from vector<4xi32>
  // CHECK-NEXT:    %y = opencl.vec_extract %w16[12] : i32 from vector<16xi32>
  opencl.kernel @words(%w: !opencl.ptr<global, i32>, %out: !opencl.ptr<global, i32>, %off: i32) {
    %w4 = opencl.vload %w[%off] : !opencl.ptr<global, i32> -> vector<4xi32>
    %w16 = opencl.vload %w[%off] : !opencl.ptr<global, i32> -> vector<16xi32>
    %x = opencl.vec_extract %w4[3] : i32 from vector<4xi32>
    %y = opencl.vec_extract %w16[12] : i32 from vector<16xi32>
    %z = arith.addi %x, %y : i32
    opencl.store %z, %out[%off] : !opencl.ptr<global, i32>
    opencl.return
  }
}

// As OpenCL C, vloadN/vstoreN at index 0 of `ptr + offset` (the offset counts elements);
// halfN needs cl_khr_fp16; lanes 10..15 are .sa .. .sf.
// OCL:      #pragma OPENCL EXTENSION cl_khr_fp16 : enable
// OCL-LABEL: __kernel void widths(
// OCL-NEXT:      __global float* p,
// OCL-NEXT:      __global half* h,
// OCL-NEXT:      __constant float* c,
// OCL-NEXT:      __local float* q,
// OCL-NEXT:      int off
// OCL-NEXT:  ) {
// OCL-NEXT:      const float2 v2 = vload2(0, p + off);
// OCL-NEXT:      const float4 v4 = vload4(0, c + off);
// OCL-NEXT:      const float8 v8 = vload8(0, p + off);
// OCL-NEXT:      const float16 v16 = vload16(0, q + off);
// OCL-NEXT:      const half2 h2 = vload2(0, h + off);
// OCL-NEXT:      const half8 h8 = vload8(0, h + off);
// OCL-NEXT:      const half16 h16 = vload16(0, h + off);
// OCL-NEXT:      vstore2(v2, 0, p + off);
// OCL-NEXT:      vstore4(v4, 0, q + off);
// OCL-NEXT:      vstore8(v8, 0, p + off);
// OCL-NEXT:      vstore16(v16, 0, p + off);
// OCL-NEXT:      vstore2(h2, 0, h + off);
// OCL-NEXT:      vstore8(h8, 0, h + off);
// OCL-NEXT:      vstore16(h16, 0, h + off);
// OCL-NEXT:  }
// A pointer only read by vload is `const`; one written by vstore is not.
// OCL-LABEL: __kernel void lanes(
// OCL-NEXT:      __global const float* p,
// OCL-NEXT:      __global half* h,
// OCL-NEXT:      __global float* out,
// OCL-NEXT:      int off,
// OCL-NEXT:      float a
// OCL-NEXT:  ) {
// OCL-NEXT:      const int o = off + 8;
// OCL-NEXT:      const float16 v16 = vload16(0, p + o);
// OCL-NEXT:      const half b = h[off];
// OCL-NEXT:      const half16 s16 = (half16)(b);
// OCL-NEXT:      const float8 m8 = (float8)(a, a, a, a, a, a, a, a);
// OCL-NEXT:      const float4 v4 = vload4(0, p + off);
// OCL-NEXT:      const half4 hv4 = vload4(0, h + off);
// OCL-NEXT:      out[off] = ((((v16.sa + (float16)(a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a).sf) + m8.s7) + ((float)s16.sb)) + v4.s3) + ((float)hv4.s1);
// OCL-NEXT:      vstore8(m8 + (float8)(a), 0, out + o);
// OCL-NEXT:      vstore16(s16, 0, h + o);
// OCL-NEXT:  }
// OCL-LABEL: __kernel void words(__global const int* w, __global int* out, int off) {
// OCL-NEXT:      const int4 w4 = vload4(0, w + off);
// OCL-NEXT:      const int16 w16 = vload16(0, w + off);
// OCL-NEXT:      out[off] = w4.s3 + w16.sc;
// OCL-NEXT:  }

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<3xf32>
  opencl.return
}
// ERR: opencl.vload result type vector<3xf32> must be a vector of 2, 4, 8 or 16 f32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<32xf32>
  opencl.return
}
// ERR: opencl.vload result type vector<32xf32> must be a vector of 2, 4, 8 or 16 f32

// -----

// f32 elements read as halves (the generic form: the custom syntax takes the element
// type from the pointer).
opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = "opencl.vload"(%p, %off) : (!opencl.ptr<global, f32>, i32) -> vector<8xf16>
  opencl.return
}
// ERR: opencl.vload result type vector<8xf16> must be a vector of 2, 4, 8 or 16 f32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, vector<4xf32>>, %off: i32) {
  %v = "opencl.vload"(%p, %off) : (!opencl.ptr<global, vector<4xf32>>, i32) -> vector<8xf32>
  opencl.return
}
// ERR: opencl.vload needs a pointer to f32, f16 or i32, got !opencl.ptr<global, vector<4xf32>>

// -----

opencl.kernel @k(%p: !opencl.ptr<global, i32>, %off: i32) {
  %v = "opencl.vload"(%p, %off) : (!opencl.ptr<global, i32>, i32) -> vector<3xi32>
  opencl.return
}
// ERR: opencl.vload result type vector<3xi32> must be a vector of 2, 4, 8 or 16 i32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = "opencl.vload"(%p, %off) : (!opencl.ptr<global, f32>, i32) -> vector<2x4xf32>
  opencl.return
}
// ERR: opencl.vload result type vector<2x4xf32> must be a vector of 2, 4, 8 or 16 f32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = arith.constant dense<0.0> : vector<3xf32>
  opencl.vstore %v, %p[%off] : vector<3xf32>, !opencl.ptr<global, f32>
  opencl.return
}
// ERR: opencl.vstore value type vector<3xf32> must be a vector of 2, 4, 8 or 16 f32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = arith.constant dense<0.0> : vector<32xf32>
  opencl.vstore %v, %p[%off] : vector<32xf32>, !opencl.ptr<global, f32>
  opencl.return
}
// ERR: opencl.vstore value type vector<32xf32> must be a vector of 2, 4, 8 or 16 f32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %h: !opencl.ptr<global, f16>, %off: i32) {
  %v = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<8xf32>
  opencl.vstore %v, %h[%off] : vector<8xf32>, !opencl.ptr<global, f16>
  opencl.return
}
// ERR: opencl.vstore value type vector<8xf32> must be a vector of 2, 4, 8 or 16 f16

// -----

opencl.kernel @k(%c: !opencl.ptr<constant, f32>, %off: i32) {
  %v = opencl.vload %c[%off] : !opencl.ptr<constant, f32> -> vector<8xf32>
  opencl.vstore %v, %c[%off] : vector<8xf32>, !opencl.ptr<constant, f32>
  opencl.return
}
// ERR: opencl.vstore into a constant pointer

// -----

opencl.kernel @k(%a: f32) {
  %m = opencl.vec_make %a, %a, %a, %a, %a, %a, %a : vector<8xf32>
  opencl.return
}
// ERR: opencl.vec_make needs exactly 8 operands, got 7

// -----

opencl.kernel @k(%a: f32) {
  %m = opencl.vec_make %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a : vector<16xf32>
  opencl.return
}
// ERR: opencl.vec_make needs exactly 16 operands, got 17

// -----

opencl.kernel @k(%a: f32) {
  %m = opencl.vec_make %a, %a, %a : vector<3xf32>
  opencl.return
}
// ERR: opencl.vec_make result must be a vector of 2, 4, 8 or 16 f32 or f16, got vector<3xf32>

// -----

opencl.kernel @k(%a: f32) {
  %s = opencl.vec_splat %a : vector<32xf32>
  opencl.return
}
// ERR: opencl.vec_splat result must be a vector of 2, 4, 8 or 16 f32 or f16, got vector<32xf32>

// -----

opencl.kernel @k(%a: f32) {
  %s = opencl.vec_splat %a : vector<8xf32>
  %e = opencl.vec_extract %s[8] : f32 from vector<8xf32>
  opencl.return
}
// ERR: opencl.vec_extract lane must be in 0..7, got 8

// -----

opencl.kernel @k(%a: f32) {
  %s = opencl.vec_splat %a : vector<16xf32>
  %e = opencl.vec_extract %s[16] : f32 from vector<16xf32>
  opencl.return
}
// ERR: opencl.vec_extract lane must be in 0..15, got 16

// -----

// Without `from`: a float4, lanes 0..3.
opencl.kernel @k(%a: f32) {
  %s = opencl.vec_splat %a : vector<4xf32>
  %e = opencl.vec_extract %s[4] : f32
  opencl.return
}
// ERR: opencl.vec_extract lane must be in 0..3, got 4

// -----

opencl.kernel @k(%a: f32) {
  %s = opencl.vec_splat %a : vector<8xf32>
  %e = "opencl.vec_extract"(%s) <{lane = 2 : i64}> : (vector<8xf32>) -> f16
  opencl.return
}
// ERR: opencl.vec_extract result type f16 does not match the element type of vector<8xf32>

// PARSE ERRORS (each extracted by its own RUN line: a parse error ends the file)

// BEGIN NOT-A-VECTOR
opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> f32
  opencl.return
}
// END
// NOTVEC: expected a 1-D vector type, got f32

// The vector's element type must be the pointer's (it was once rebuilt from the pointer).
// BEGIN WRONG-ELEMENT
opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = opencl.vload %p[%off] : !opencl.ptr<global, f32> -> vector<8xf16>
  opencl.return
}
// END
// ELEMENT: opencl.vload of !opencl.ptr<global, f32> gives vectors of f32, not vector<8xf16>

// `from` must name a vector of the result's element type.
// BEGIN EXTRACT-FROM
opencl.kernel @k(%a: f16) {
  %s = opencl.vec_splat %a : vector<8xf16>
  %e = opencl.vec_extract %s[2] : f32 from vector<8xf16>
  opencl.return
}
// END
// FROM: opencl.vec_extract of f32 needs a vector of f32 after 'from', got vector<8xf16>

// The legacy `vec_extract ... : f32` reads its operand as a float4: a float8 is refused.
// BEGIN LEGACY-EXTRACT
opencl.kernel @k(%a: f32) {
  %s = opencl.vec_splat %a : vector<8xf32>
  %e = opencl.vec_extract %s[5] : f32
  opencl.return
}
// END
// LEGACY: operand is used with type vector<4xf32>, but has been previously used or defined with type vector<8xf32>
