// RUN: adreno-opt %s --split-input-file -p plan-memory | filecheck %s
// RUN: adreno-opt %s --split-input-file -p graph-fuse{epilogues=false},plan-memory,select-kernel-config{split-k-items=0},convert-graph-to-opencl | filecheck %s --check-prefix=HOST

// plan-memory places concat inputs in their concat's storage: the op that writes a
// placed value gets `storage = {alloc = N, c4_offset = K}` (the value starts at channel
// block K of shared allocation N), and so does each concat that lives there. The
// lowering allocates each shared allocation once, at its largest member's size, passes
// each writer its offset as a `c4_offset` launch argument, and copies only the concat
// inputs that are not already at their slot.

// DenseNet's pattern: c1 = concat(f0, f1), f2 = conv(c1), c2 = concat(f0, f1, f2). The
// last concat founds allocation 0; c1 is its prefix; f0, f1 (images) move to its buffer.
// The conv reads c1 and writes f2 into the same buffer, at other channel blocks.

// CHECK-LABEL: func.func @dense
// CHECK:         %f0 = graph.relu %x {storage = {alloc = 0 : i64, c4_offset = 0 : i64}} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:    %f1 = graph.sigmoid %y {storage = {alloc = 0 : i64, c4_offset = 4 : i64}} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:    %c1 = graph.concat %f0, %f1 {storage = {alloc = 0 : i64, c4_offset = 0 : i64}, axis = 1 : i64}
// CHECK:         %f2 = graph.fused {storage = {alloc = 0 : i64, c4_offset = 6 : i64}} -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
// CHECK:         %c2 = graph.concat %f0, %f1, %f2 {storage = {alloc = 0 : i64, c4_offset = 0 : i64}, axis = 1 : i64}

// HOST-NOT:     copy_4c
// HOST-LABEL: func.func @dense
// HOST-NEXT:    %c2 = opencl.alloc_buffer : !opencl.buffer<2048xf32>
// HOST-NEXT:    opencl.launch @relu_4c(%x, %c2) global [8, 8, 4]
// HOST-NEXT:    %[[FOUR:.+]] = arith.constant 4 : i32
// HOST-NEXT:    opencl.launch @sigmoid_4c(%y, %c2, %[[FOUR]]) global [8, 8, 2]
// HOST:         %[[SIX:.+]] = arith.constant 6 : i32
// HOST-NEXT:    opencl.launch @conv1x1_4c_relu(%c2, %w, %c2, %[[SIX]], %[[SIX]]) global [2, 8, 2]
// HOST-NEXT:    func.return %c2

func.func @dense(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %y: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
  %f0 = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, #texture.image<texture, h = 32, w = 8>>
  %f1 = graph.sigmoid %y : !texture.tensor<1x2x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, #texture.image<texture, h = 16, w = 8>>
  %c1 = graph.concat %f0, %f1 {axis = 1 : i64} : (!texture.tensor<1x4x8x8x4xf32, nchw4c, #texture.image<texture, h = 32, w = 8>>, !texture.tensor<1x2x8x8x4xf32, nchw4c, #texture.image<texture, h = 16, w = 8>>) -> !texture.tensor<1x6x8x8x4xf32, nchw4c, global>
  %w = graph.constant dense<0.5> : tensor<2x24x1x1x4xf32>
  %f2 = graph.fused -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
    %v = graph.conv2d %c1, %w : !texture.tensor<1x6x8x8x4xf32, nchw4c, global>, tensor<2x24x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
    %r = graph.relu %v : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
    graph.yield %r : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  }
  %c2 = graph.concat %f0, %f1, %f2 {axis = 1 : i64} : (!texture.tensor<1x4x8x8x4xf32, nchw4c, #texture.image<texture, h = 32, w = 8>>, !texture.tensor<1x2x8x8x4xf32, nchw4c, #texture.image<texture, h = 16, w = 8>>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  func.return %c2 : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
}

// -----

// Copies kept: %x is a model input (no kernel of ours writes it), %a is at a non-zero
// offset and also read by the sigmoid (which reads channel block 0 of a value's
// storage). %b is placed.

// CHECK-LABEL: func.func @kept
// CHECK:         %a = graph.relu %y : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:    %b = graph.tanh %x {storage = {alloc = 0 : i64, c4_offset = 4 : i64}}
// CHECK-NEXT:    %c = graph.concat %x, %b, %a {storage = {alloc = 0 : i64, c4_offset = 0 : i64}, axis = 1 : i64}
// CHECK-NEXT:    %s = graph.sigmoid %a : !texture.tensor

// HOST-LABEL: func.func @kept
// HOST:         %c = opencl.alloc_buffer : !opencl.buffer<2560xf32>
// HOST-NEXT:    %[[FOUR:.+]] = arith.constant 4 : i32
// HOST-NEXT:    opencl.launch @tanh_4c(%x, %c, %[[FOUR]])
// HOST-NEXT:    %[[ZERO:.+]] = arith.constant 0 : i32
// HOST-NEXT:    opencl.launch @copy_4c(%x, %c, %[[ZERO]]) global [8, 8, 4]
// HOST-NEXT:    %[[EIGHT:.+]] = arith.constant 8 : i32
// HOST-NEXT:    opencl.launch @copy_4c(%a, %c, %[[EIGHT]]) global [8, 8, 2]

func.func @kept(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %y: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x10x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) {
  %a = graph.relu %y : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %b = graph.tanh %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  %c = graph.concat %x, %b, %a {axis = 1 : i64} : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x10x8x8x4xf32, nchw4c, global>
  %s = graph.sigmoid %a : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %c, %s : !texture.tensor<1x10x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}

// -----

// A value in two concats at different offsets lives in one: the later concat (c2)
// holds b and a; c1 copies them, reading a at channel block 2 of c2's storage
// (`src_c4_offset`).

// CHECK-LABEL: func.func @two_offsets
// CHECK:         %a = graph.relu %x {storage = {alloc = 0 : i64, c4_offset = 2 : i64}}
// CHECK-NEXT:    %b = graph.tanh %y {storage = {alloc = 0 : i64, c4_offset = 0 : i64}}
// CHECK-NEXT:    %c1 = graph.concat %a, %b {axis = 1 : i64}
// CHECK-NEXT:    %c2 = graph.concat %b, %a {storage = {alloc = 0 : i64, c4_offset = 0 : i64}, axis = 1 : i64}

// HOST:         opencl.kernel @copy_4c(%x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>, %src_c4_offset: i32, %c4_offset: i32)
// HOST-LABEL: func.func @two_offsets
// HOST:         %c2 = opencl.alloc_buffer : !opencl.buffer<1536xf32>
// HOST:         %c1 = opencl.alloc_buffer : !opencl.buffer<1536xf32>
// HOST-NEXT:    %[[ZERO:.+]] = arith.constant 0 : i32
// HOST-NEXT:    opencl.launch @copy_4c(%c2, %c1, %{{.+}}, %[[ZERO]]) global [8, 8, 4]

func.func @two_offsets(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %y: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x6x8x8x4xf32, nchw4c, global>, !texture.tensor<1x6x8x8x4xf32, nchw4c, global>) {
  %a = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  %b = graph.tanh %y : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %c1 = graph.concat %a, %b {axis = 1 : i64} : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x6x8x8x4xf32, nchw4c, global>
  %c2 = graph.concat %b, %a {axis = 1 : i64} : (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x6x8x8x4xf32, nchw4c, global>
  func.return %c1, %c2 : !texture.tensor<1x6x8x8x4xf32, nchw4c, global>, !texture.tensor<1x6x8x8x4xf32, nchw4c, global>
}

// -----

// Plain NCHW concats keep their copies.

// CHECK-LABEL: func.func @nchw
// CHECK-NOT:     storage
// HOST-LABEL: func.func @nchw
// HOST-COUNT-2: opencl.launch @concat_copy

func.func @nchw(%x: tensor<1x6x8x8xf32>) -> tensor<1x12x8x8xf32> {
  %a = graph.relu %x : tensor<1x6x8x8xf32>
  %b = graph.tanh %x : tensor<1x6x8x8xf32>
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x6x8x8xf32>, tensor<1x6x8x8xf32>) -> tensor<1x12x8x8xf32>
  func.return %c : tensor<1x12x8x8xf32>
}
