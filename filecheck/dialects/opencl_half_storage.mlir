// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt --print-op-generic | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt -t opencl | filecheck %s --check-prefix=OCL
// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ERR

// opencl.vload_half / opencl.vstore_half: halves in memory, floats in the kernel (fp16
// storage read and written by an fp32 kernel, such as a decoder's KV cache after
// `kv-cache-storage{element=f16}`). `%v = opencl.vload_half %p[%off] : !opencl.ptr<S, f16>
// -> f32` (or a vector of 2, 4, 8 or 16 f32) reads 1 .. 16 halves from ELEMENT offset
// `off`, widened to floats, printed `vload_half(0, p + off)` / `vload_halfN(0, p + off)`;
// `opencl.vstore_half %v, %p[%off] : f32, !opencl.ptr<S, f16>` rounds floats to halves,
// printed `vstore_half(v, 0, p + off)` / `vstore_halfN(v, 0, p + off)`. Both are OpenCL 1.2
// core: a kernel that only moves halves this way needs no cl_khr_fp16 pragma. (Unlike
// opencl.vload_half4 / opencl.vstore_half4, whose index counts groups of four halves.)
// The first chunk round-trips (parse, print, parse again; and through the generic form)
// and prints as OpenCL C; the chunks after it must fail to verify with the messages below.

builtin.module {
  // Every width of both ops, from global, constant and local halves.
  // CHECK-LABEL: opencl.kernel @half_storage(%h: !opencl.ptr<global, f16>, %c: !opencl.ptr<constant, f16>, %t: !opencl.ptr<local, f16>, %out: !opencl.ptr<global, f32>, %off: i32) {
  // CHECK-NEXT:    %x = opencl.vload_half %h[%off] : !opencl.ptr<global, f16> -> f32
  // CHECK-NEXT:    %v2 = opencl.vload_half %h[%off] : !opencl.ptr<global, f16> -> vector<2xf32>
  // CHECK-NEXT:    %v4 = opencl.vload_half %c[%off] : !opencl.ptr<constant, f16> -> vector<4xf32>
  // CHECK-NEXT:    %v8 = opencl.vload_half %t[%off] : !opencl.ptr<local, f16> -> vector<8xf32>
  // CHECK-NEXT:    %v16 = opencl.vload_half %h[%off] {tag} : !opencl.ptr<global, f16> -> vector<16xf32>
  // CHECK-NEXT:    %y = arith.addf %x, %x : f32
  // CHECK-NEXT:    opencl.vstore_half %y, %h[%off] : f32, !opencl.ptr<global, f16>
  // CHECK-NEXT:    opencl.vstore_half %v2, %h[%off] : vector<2xf32>, !opencl.ptr<global, f16>
  // CHECK-NEXT:    opencl.vstore_half %v4, %h[%off] {tag} : vector<4xf32>, !opencl.ptr<global, f16>
  // CHECK-NEXT:    opencl.vstore_half %v8, %t[%off] : vector<8xf32>, !opencl.ptr<local, f16>
  // CHECK-NEXT:    opencl.vstore_half %v16, %h[%off] : vector<16xf32>, !opencl.ptr<global, f16>
  // CHECK-NEXT:    opencl.store %y, %out[%off] : !opencl.ptr<global, f32>
  // CHECK-NEXT:    opencl.return
  opencl.kernel @half_storage(%h: !opencl.ptr<global, f16>, %c: !opencl.ptr<constant, f16>,
                              %t: !opencl.ptr<local, f16>, %out: !opencl.ptr<global, f32>, %off: i32) {
    %x = opencl.vload_half %h[%off] : !opencl.ptr<global, f16> -> f32
    %v2 = opencl.vload_half %h[%off] : !opencl.ptr<global, f16> -> vector<2xf32>
    %v4 = opencl.vload_half %c[%off] : !opencl.ptr<constant, f16> -> vector<4xf32>
    %v8 = opencl.vload_half %t[%off] : !opencl.ptr<local, f16> -> vector<8xf32>
    %v16 = opencl.vload_half %h[%off] {tag} : !opencl.ptr<global, f16> -> vector<16xf32>
    %y = arith.addf %x, %x : f32
    opencl.vstore_half %y, %h[%off] : f32, !opencl.ptr<global, f16>
    opencl.vstore_half %v2, %h[%off] : vector<2xf32>, !opencl.ptr<global, f16>
    opencl.vstore_half %v4, %h[%off] {tag} : vector<4xf32>, !opencl.ptr<global, f16>
    opencl.vstore_half %v8, %t[%off] : vector<8xf32>, !opencl.ptr<local, f16>
    opencl.vstore_half %v16, %h[%off] : vector<16xf32>, !opencl.ptr<global, f16>
    opencl.store %y, %out[%off] : !opencl.ptr<global, f32>
    opencl.return
  }

  // A half cache read (a float4 of its row, one float of another), its lanes used as
  // floats, one new row written back; and the group-indexed vload_half4 beside the
  // element-offset vload_half.
  // CHECK-LABEL: opencl.kernel @cache_row(%cache: !opencl.ptr<global, f16>, %rows: !opencl.ptr<global, f16>, %out: !opencl.ptr<global, f32>, %off: i32, %i: i32) {
  // CHECK-NEXT:    %r = opencl.vload_half %rows[%off] : !opencl.ptr<global, f16> -> vector<4xf32>
  // CHECK-NEXT:    %s = opencl.vload_half %rows[%i] : !opencl.ptr<global, f16> -> f32
  // CHECK-NEXT:    %g = opencl.vload_half4 %rows[%i] : !opencl.ptr<global, f16>
  // CHECK-NEXT:    %l2 = opencl.vec_extract %r[2] : f32 from vector<4xf32>
  // CHECK-NEXT:    %sum = arith.addf %l2, %s : f32
  // CHECK-NEXT:    opencl.store %sum, %out[%off] : !opencl.ptr<global, f32>
  // CHECK-NEXT:    %w = arith.addf %r, %g : vector<4xf32>
  // CHECK-NEXT:    opencl.vstore_half %w, %cache[%off] : vector<4xf32>, !opencl.ptr<global, f16>
  // CHECK-NEXT:    opencl.vstore_half %sum, %cache[%i] : f32, !opencl.ptr<global, f16>
  // CHECK-NEXT:    opencl.return
  opencl.kernel @cache_row(%cache: !opencl.ptr<global, f16>, %rows: !opencl.ptr<global, f16>,
                           %out: !opencl.ptr<global, f32>, %off: i32, %i: i32) {
    %r = opencl.vload_half %rows[%off] : !opencl.ptr<global, f16> -> vector<4xf32>
    %s = opencl.vload_half %rows[%i] : !opencl.ptr<global, f16> -> f32
    %g = opencl.vload_half4 %rows[%i] : !opencl.ptr<global, f16>
    %l2 = opencl.vec_extract %r[2] : f32 from vector<4xf32>
    %sum = arith.addf %l2, %s : f32
    opencl.store %sum, %out[%off] : !opencl.ptr<global, f32>
    %w = arith.addf %r, %g : vector<4xf32>
    opencl.vstore_half %w, %cache[%off] : vector<4xf32>, !opencl.ptr<global, f16>
    opencl.vstore_half %sum, %cache[%i] : f32, !opencl.ptr<global, f16>
    opencl.return
  }
}

// The generic form: the operands (pointer, offset; value, pointer, offset) and the result
// type.
// GENERIC-LABEL: "opencl.kernel"() <{sym_name = "half_storage"
// GENERIC:       %x = "opencl.vload_half"(%h, %off) : (!opencl.ptr<global, f16>, i32) -> f32
// GENERIC-NEXT:  %v2 = "opencl.vload_half"(%h, %off) : (!opencl.ptr<global, f16>, i32) -> vector<2xf32>
// GENERIC-NEXT:  %v4 = "opencl.vload_half"(%c, %off) : (!opencl.ptr<constant, f16>, i32) -> vector<4xf32>
// GENERIC-NEXT:  %v8 = "opencl.vload_half"(%t, %off) : (!opencl.ptr<local, f16>, i32) -> vector<8xf32>
// GENERIC-NEXT:  %v16 = "opencl.vload_half"(%h, %off) {tag} : (!opencl.ptr<global, f16>, i32) -> vector<16xf32>
// GENERIC:       "opencl.vstore_half"(%y, %h, %off) : (f32, !opencl.ptr<global, f16>, i32) -> ()
// GENERIC-NEXT:  "opencl.vstore_half"(%v2, %h, %off) : (vector<2xf32>, !opencl.ptr<global, f16>, i32) -> ()
// GENERIC-NEXT:  "opencl.vstore_half"(%v4, %h, %off) {tag} : (vector<4xf32>, !opencl.ptr<global, f16>, i32) -> ()
// GENERIC-NEXT:  "opencl.vstore_half"(%v8, %t, %off) : (vector<8xf32>, !opencl.ptr<local, f16>, i32) -> ()
// GENERIC-NEXT:  "opencl.vstore_half"(%v16, %h, %off) : (vector<16xf32>, !opencl.ptr<global, f16>, i32) -> ()
// GENERIC-LABEL: "opencl.kernel"() <{sym_name = "cache_row"

// As OpenCL C: vload_half[N](0, p + off) / vstore_half[N](v, 0, p + off), the offset
// counting halves (vload_half4(i, p) counts groups of four); a half pointer that is only
// read is `const`, one written is not; no cl_khr_fp16 (declaring half pointers and these
// built-ins are OpenCL 1.2 core), neither at the top nor anywhere after.
// OCL-NOT:    cl_khr_fp16
// OCL:        #pragma OPENCL FP_CONTRACT OFF
// OCL-NOT:    cl_khr_fp16
// OCL-LABEL:  __kernel void half_storage(
// OCL-NEXT:       __global half* h,
// OCL-NEXT:       __constant half* c,
// OCL-NEXT:       __local half* t,
// OCL-NEXT:       __global float* out,
// OCL-NEXT:       int off
// OCL-NEXT:   ) {
// OCL-NEXT:       const float x = vload_half(0, h + off);
// OCL-NEXT:       const float2 v2 = vload_half2(0, h + off);
// OCL-NEXT:       const float4 v4 = vload_half4(0, c + off);
// OCL-NEXT:       const float8 v8 = vload_half8(0, t + off);
// OCL-NEXT:       const float16 v16 = vload_half16(0, h + off);
// OCL-NEXT:       const float y = x + x;
// OCL-NEXT:       vstore_half(y, 0, h + off);
// OCL-NEXT:       vstore_half2(v2, 0, h + off);
// OCL-NEXT:       vstore_half4(v4, 0, h + off);
// OCL-NEXT:       vstore_half8(v8, 0, t + off);
// OCL-NEXT:       vstore_half16(v16, 0, h + off);
// OCL-NEXT:       out[off] = y;
// OCL-NEXT:   }
// OCL-LABEL:  __kernel void cache_row(
// OCL-NEXT:       __global half* cache,
// OCL-NEXT:       __global const half* rows,
// OCL-NEXT:       __global float* out,
// OCL-NEXT:       int off,
// OCL-NEXT:       int i
// OCL-NEXT:   ) {
// OCL-NEXT:       const float4 r = vload_half4(0, rows + off);
// OCL-NEXT:       const float s = vload_half(0, rows + i);
// OCL-NEXT:       const float4 g = vload_half4(i, rows);
// OCL-NEXT:       const float sum = r.s2 + s;
// OCL-NEXT:       out[off] = sum;
// OCL-NEXT:       vstore_half4(r + g, 0, cache + off);
// OCL-NEXT:       vstore_half(sum, 0, cache + i);
// OCL-NEXT:   }
// OCL-NOT:    cl_khr_fp16

// -----

// The pointer must hold halves: a float buffer is read with opencl.load / opencl.vload.
opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32) {
  %v = opencl.vload_half %p[%off] : !opencl.ptr<global, f32> -> vector<4xf32>
  opencl.return
}
// ERR: opencl.vload_half reads a pointer to f16, got !opencl.ptr<global, f32>

// -----

opencl.kernel @k(%p: !opencl.ptr<global, i32>, %off: i32) {
  %v = opencl.vload_half %p[%off] : !opencl.ptr<global, i32> -> f32
  opencl.return
}
// ERR: opencl.vload_half reads a pointer to f16, got !opencl.ptr<global, i32>

// -----

// The result is widened: f32 or floatN, never halves (the generic form: the custom syntax
// names only the lanes).
opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %v = "opencl.vload_half"(%h, %off) : (!opencl.ptr<global, f16>, i32) -> f16
  opencl.return
}
// ERR: opencl.vload_half gives f32 or a vector of 2, 4, 8 or 16 f32, got f16

// -----

opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %v = "opencl.vload_half"(%h, %off) : (!opencl.ptr<global, f16>, i32) -> vector<4xf16>
  opencl.return
}
// ERR: opencl.vload_half gives f32 or a vector of 2, 4, 8 or 16 f32, got vector<4xf16>

// -----

opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %v = opencl.vload_half %h[%off] : !opencl.ptr<global, f16> -> vector<3xf32>
  opencl.return
}
// ERR: opencl.vload_half gives f32 or a vector of 2, 4, 8 or 16 f32, got vector<3xf32>

// -----

opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %v = "opencl.vload_half"(%h, %off) : (!opencl.ptr<global, f16>, i32) -> vector<32xf32>
  opencl.return
}
// ERR: opencl.vload_half gives f32 or a vector of 2, 4, 8 or 16 f32, got vector<32xf32>

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %off: i32, %a: f32) {
  opencl.vstore_half %a, %p[%off] : f32, !opencl.ptr<global, f32>
  opencl.return
}
// ERR: opencl.vstore_half writes through a pointer to f16, got !opencl.ptr<global, f32>

// -----

// The value is a float (or floatN) to round: halves are stored with opencl.store /
// opencl.vstore (cl_khr_fp16).
opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %b = opencl.load %h[%off] : !opencl.ptr<global, f16>
  opencl.vstore_half %b, %h[%off] : f16, !opencl.ptr<global, f16>
  opencl.return
}
// ERR: opencl.vstore_half stores f32 or a vector of 2, 4, 8 or 16 f32, got f16

// -----

opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %b = opencl.vload %h[%off] : !opencl.ptr<global, f16> -> vector<4xf16>
  opencl.vstore_half %b, %h[%off] : vector<4xf16>, !opencl.ptr<global, f16>
  opencl.return
}
// ERR: opencl.vstore_half stores f32 or a vector of 2, 4, 8 or 16 f32, got vector<4xf16>

// -----

opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i32) {
  %v = arith.constant dense<0.0> : vector<3xf32>
  opencl.vstore_half %v, %h[%off] : vector<3xf32>, !opencl.ptr<global, f16>
  opencl.return
}
// ERR: opencl.vstore_half stores f32 or a vector of 2, 4, 8 or 16 f32, got vector<3xf32>

// -----

opencl.kernel @k(%c: !opencl.ptr<constant, f16>, %off: i32) {
  %v = opencl.vload_half %c[%off] : !opencl.ptr<constant, f16> -> vector<8xf32>
  opencl.vstore_half %v, %c[%off] : vector<8xf32>, !opencl.ptr<constant, f16>
  opencl.return
}
// ERR: opencl.vstore_half into a constant pointer

// -----

// The offset is an i32 (generic form: the custom syntax takes it as one).
opencl.kernel @k(%h: !opencl.ptr<global, f16>, %off: i64) {
  %v = "opencl.vload_half"(%h, %off) : (!opencl.ptr<global, f16>, i64) -> f32
  opencl.return
}
// ERR: operand 'offset' at position 1 does not verify:
// ERR-NEXT: Expected attribute i32 but got i64
