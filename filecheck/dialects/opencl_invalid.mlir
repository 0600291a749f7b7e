// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

opencl.kernel @k(%p: !opencl.ptr<heap, f32>) {
  opencl.return
}
// CHECK: invalid address space 'heap' in !opencl.ptr, expected one of global, local, constant, private

// -----

opencl.kernel @k(%p: !opencl.ptr<global, i8>) {
  opencl.return
}
// CHECK: invalid pointee type i8 in !opencl.ptr, expected f32, f16, i32, vector<4xf32> or vector<4xf16>

// -----

opencl.kernel @k(%p: !opencl.ptr<private, f32>) {
  opencl.return
}
// CHECK: kernel argument #0 has address space 'private', expected global, constant or local

// -----

opencl.kernel @k(%p: i64) {
  opencl.return
}
// CHECK: kernel argument #0 has unsupported type i64, expected !opencl.ptr, !opencl.image2d, i32 or f32

// -----

opencl.kernel @k(%p: i32) attributes {arg_names = ["a", "b"]} {
  opencl.return
}
// CHECK: arg_names has 2 entries but the kernel has 1 arguments

// -----

opencl.kernel @k(%p: i32) attributes {reqd_work_group_size = array<i64: 16, 4>} {
  opencl.return
}
// CHECK: reqd_work_group_size must have exactly 3 positive entries, got [16, 4]

// -----

opencl.kernel @k(%p: i32) {
  %x = "opencl.global_id"() <{dim = 3 : i64}> : () -> i32
  opencl.return
}
// CHECK: opencl.global_id dimension must be 0, 1 or 2, got 3

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %i: i32) {
  %x = "opencl.load"(%p, %i) : (!opencl.ptr<global, f32>, i32) -> i32
  opencl.return
}
// CHECK: opencl.load result type i32 does not match the pointee type f32

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %i: i32) {
  "opencl.store"(%i, %p, %i) : (i32, !opencl.ptr<global, f32>, i32) -> ()
  opencl.return
}
// CHECK: opencl.store value type i32 does not match the pointee type f32

// -----

opencl.kernel @k(%p: !opencl.ptr<constant, f32>, %i: i32, %v: f32) {
  opencl.store %v, %p[%i] : !opencl.ptr<constant, f32>
  opencl.return
}
// CHECK: opencl.store into a constant pointer

// -----

opencl.kernel @k(%p: !opencl.ptr<global, i32>, %i: i32) {
  %v = "opencl.vload4"(%p, %i) : (!opencl.ptr<global, i32>, i32) -> vector<4xi32>
  opencl.return
}
// CHECK: opencl.vload4 needs a pointer to f32 or f16, got !opencl.ptr<global, i32>

// -----

opencl.kernel @k(%img: !opencl.image2d<write>, %x: i32) {
  %v = "opencl.read_imagef"(%img, %x, %x) : (!opencl.image2d<write>, i32, i32) -> vector<4xf32>
  opencl.return
}
// CHECK: opencl.read_imagef needs an image with read access, got !opencl.image2d<write>

// -----

opencl.kernel @k(%img: !opencl.image2d<read>, %x: i32) {
  %v = "opencl.read_imagef"(%img, %x, %x) : (!opencl.image2d<read>, i32, i32) -> vector<4xi32>
  opencl.return
}
// CHECK: opencl.read_imagef result must be vector<4xf32> or vector<4xf16>, got vector<4xi32>

// -----

opencl.kernel @k(%img: !opencl.image2d<read>, %x: i32, %v: vector<4xf32>) {
  "opencl.write_imagef"(%img, %x, %x, %v) : (!opencl.image2d<read>, i32, i32, vector<4xf32>) -> ()
  opencl.return
}
// CHECK: opencl.write_imagef needs an image with write access, got !opencl.image2d<read>

// -----

opencl.kernel @k(%img: !opencl.image2d<rw>) {
  opencl.return
}
// CHECK: invalid image access 'rw', expected read or write

// -----

opencl.kernel @k(%x: i32) {
  opencl.barrier everywhere
  opencl.return
}
// CHECK: invalid barrier fence 'everywhere', expected local, global or local_global

// -----

opencl.kernel @k(%x: i32) {
  %a = opencl.local_alloc {size = 16} : !opencl.ptr<global, f32>
  opencl.return
}
// CHECK: opencl.local_alloc must produce a pointer in the local address space, got !opencl.ptr<global, f32>

// -----

opencl.kernel @k(%x: i32, %c: i1) {
  scf.if %c {
    %a = opencl.local_alloc {size = 16} : !opencl.ptr<local, f32>
  }
  opencl.return
}
// CHECK: opencl.local_alloc must be directly inside an opencl.kernel body

// -----

opencl.kernel @k(%x: f32) {
  %v = "opencl.vec_make"(%x, %x, %x) : (f32, f32, f32) -> vector<4xf32>
  opencl.return
}
// CHECK: opencl.vec_make needs exactly 4 operands, got 3

// -----

opencl.kernel @k(%x: vector<4xf32>) {
  opencl.return
}
// CHECK: kernel argument #0 has unsupported type vector<4xf32>

// -----

opencl.kernel @k(%x: i32) {
  %c = arith.constant 0 : i32
}
// CHECK: Operation arith.constant terminates block in single-block region but is not a terminator

// -----

func.func @f() {
  opencl.return
}
// CHECK: 'opencl.return' expects parent op 'opencl.kernel'

// -----

func.func @host() {
  %b = opencl.alloc_buffer : !opencl.buffer<16xf32>
  opencl.launch @missing(%b) global [16] : (!opencl.buffer<16xf32>)
  func.return
}
// CHECK: opencl.launch refers to unknown kernel @missing

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %n: i32) {
  opencl.return
}
func.func @host() {
  %b = opencl.alloc_buffer : !opencl.buffer<16xf32>
  opencl.launch @k(%b) global [16] : (!opencl.buffer<16xf32>)
  func.return
}
// CHECK: opencl.launch @k passes 1 arguments but the kernel takes 2

// -----

opencl.kernel @k(%p: !opencl.ptr<global, f32>, %n: i32) {
  opencl.return
}
func.func @host() {
  %b = opencl.alloc_buffer : !opencl.buffer<16xf32>
  %f = arith.constant 1.0 : f32
  opencl.launch @k(%b, %f) global [16] : (!opencl.buffer<16xf32>, f32)
  func.return
}
// CHECK: opencl.launch @k: argument #1 of type f32 does not match kernel argument type i32

// -----

opencl.kernel @k(%img: !opencl.image2d<read>) {
  opencl.return
}
func.func @host() {
  %b = opencl.alloc_buffer : !opencl.buffer<16xf32>
  opencl.launch @k(%b) global [16] : (!opencl.buffer<16xf32>)
  func.return
}
// CHECK: opencl.launch @k: argument #0 of type !opencl.buffer<16xf32> does not match kernel argument type !opencl.image2d<read>

// -----

opencl.kernel @k(%n: i32) {
  opencl.return
}
func.func @host(%n: i32) {
  opencl.launch @k(%n) global [16, 10] local [4, 4] : (i32)
  func.return
}
// CHECK: opencl.launch @k: global size 10 is not divisible by local size 4 in dimension 1

// -----

opencl.kernel @k(%n: i32) {
  opencl.return
}
func.func @host(%n: i32) {
  opencl.launch @k(%n) global [16, 16] local [4] : (i32)
  func.return
}
// CHECK: opencl.launch @k: local size rank 1 differs from global size rank 2

// -----

opencl.kernel @k(%n: i32) {
  opencl.return
}
func.func @host(%n: i32) {
  opencl.launch @k(%n) global [1, 1, 1, 1] : (i32)
  func.return
}
// CHECK: opencl.launch @k: global size must have 1 to 3 dimensions, got 4

// -----

func.func @host() {
  %a = opencl.alloc_buffer : !opencl.buffer<16xf32>
  %b = opencl.alloc_buffer : !opencl.buffer<32xf32>
  "opencl.copy"(%a, %b) : (!opencl.buffer<16xf32>, !opencl.buffer<32xf32>) -> ()
  func.return
}
// CHECK: attribute !opencl.buffer<16xf32> expected from variable 'T', but got !opencl.buffer<32xf32>

// -----

func.func @host() {
  %a = opencl.alloc_buffer : !opencl.buffer<16xi8>
  func.return
}
// CHECK: invalid !opencl.buffer element type i8, expected f32, f16 or i32

// -----

func.func @host() {
  %a = opencl.alloc_image : !opencl.image<4x4, rgba_u8>
  func.return
}
// CHECK: invalid image format 'rgba_u8', expected rgba_f32 or rgba_f16
