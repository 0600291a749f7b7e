// RUN: adreno-opt %s | adreno-opt | filecheck %s

builtin.module {
  // CHECK-LABEL: opencl.kernel @everything(
  // CHECK-SAME: %in: !opencl.ptr<global, f32>, %cst: !opencl.ptr<constant, f16>, %out: !opencl.ptr<global, vector<4xf32>>,
  // CHECK-SAME: %img: !opencl.image2d<read>, %oimg: !opencl.image2d<write>, %n: i32, %alpha: f32, %scratch: !opencl.ptr<local, i32>)
  // CHECK-SAME: attributes {reqd_work_group_size = array<i64: 16, 4, 1>}
  opencl.kernel @everything(%in: !opencl.ptr<global, f32>, %cst: !opencl.ptr<constant, f16>,
                            %out: !opencl.ptr<global, vector<4xf32>>,
                            %img: !opencl.image2d<read>, %oimg: !opencl.image2d<write>,
                            %n: i32, %alpha: f32, %scratch: !opencl.ptr<local, i32>)
      attributes {reqd_work_group_size = array<i64: 16, 4, 1>} {
    // CHECK-NEXT: %gid = opencl.global_id 0
    // CHECK-NEXT: %lid = opencl.local_id 1
    // CHECK-NEXT: %grp = opencl.group_id 2
    // CHECK-NEXT: %gsz = opencl.global_size 0
    // CHECK-NEXT: %lsz = opencl.local_size 1
    // CHECK-NEXT: %ngr = opencl.num_groups 2
    %gid = opencl.global_id 0
    %lid = opencl.local_id 1
    %grp = opencl.group_id 2
    %gsz = opencl.global_size 0
    %lsz = opencl.local_size 1
    %ngr = opencl.num_groups 2
    // CHECK-NEXT: %tile = opencl.local_alloc {size = 256 : i64} : !opencl.ptr<local, f32>
    // CHECK-NEXT: %priv = opencl.private_alloc {size = 8 : i64} : !opencl.ptr<private, f32>
    %tile = opencl.local_alloc {size = 256} : !opencl.ptr<local, f32>
    %priv = opencl.private_alloc {size = 8} : !opencl.ptr<private, f32>
    // CHECK-NEXT: %x = opencl.load %in[%gid] : !opencl.ptr<global, f32>
    // CHECK-NEXT: %h = opencl.load %cst[%gid] : !opencl.ptr<constant, f16>
    // CHECK-NEXT: opencl.store %x, %tile[%lid] : !opencl.ptr<local, f32>
    // CHECK-NEXT: opencl.store %x, %priv[%lid] : !opencl.ptr<private, f32>
    // CHECK-NEXT: opencl.barrier local
    // CHECK-NEXT: opencl.barrier global
    // CHECK-NEXT: opencl.barrier local_global
    %x = opencl.load %in[%gid] : !opencl.ptr<global, f32>
    %h = opencl.load %cst[%gid] : !opencl.ptr<constant, f16>
    opencl.store %x, %tile[%lid] : !opencl.ptr<local, f32>
    opencl.store %x, %priv[%lid] : !opencl.ptr<private, f32>
    opencl.barrier local
    opencl.barrier global
    opencl.barrier local_global
    // CHECK-NEXT: %v = opencl.vload4 %in[%gid] : !opencl.ptr<global, f32>
    // CHECK-NEXT: opencl.vstore4 %v, %tile[%lid] : !opencl.ptr<local, f32>
    // CHECK-NEXT: %px = opencl.read_imagef %img[%gid, %lid] : vector<4xf32>
    // CHECK-NEXT: opencl.write_imagef %oimg[%gid, %lid], %px : vector<4xf32>
    %v = opencl.vload4 %in[%gid] : !opencl.ptr<global, f32>
    opencl.vstore4 %v, %tile[%lid] : !opencl.ptr<local, f32>
    %px = opencl.read_imagef %img[%gid, %lid] : vector<4xf32>
    opencl.write_imagef %oimg[%gid, %lid], %px : vector<4xf32>
    // Half pixels (read_imageh / write_imageh, cl_khr_fp16):
    // CHECK-NEXT: %hx = opencl.read_imagef %img[%gid, %lid] : vector<4xf16>
    // CHECK-NEXT: opencl.write_imagef %oimg[%gid, %lid], %hx : vector<4xf16>
    %hx = opencl.read_imagef %img[%gid, %lid] : vector<4xf16>
    opencl.write_imagef %oimg[%gid, %lid], %hx : vector<4xf16>
    // CHECK-NEXT: %s = opencl.vec_splat %alpha : vector<4xf32>
    // CHECK-NEXT: %m = opencl.vec_make %x, %x, %alpha, %alpha : vector<4xf32>
    // CHECK-NEXT: %e = opencl.vec_extract %m[2] : f32
    // CHECK-NEXT: opencl.store %m, %out[%gid] : !opencl.ptr<global, vector<4xf32>>
    // CHECK-NEXT: opencl.return
    %s = opencl.vec_splat %alpha : vector<4xf32>
    %m = opencl.vec_make %x, %x, %alpha, %alpha : vector<4xf32>
    %e = opencl.vec_extract %m[2] : f32
    opencl.store %m, %out[%gid] : !opencl.ptr<global, vector<4xf32>>
    opencl.return
  }

  // Half storage with float arithmetic (OpenCL 1.2 core, no cl_khr_fp16) and the
  // lane-wise select on f32 and float4.
  // CHECK-LABEL: opencl.kernel @halves(%hp: !opencl.ptr<global, f16>, %hc: !opencl.ptr<constant, f16>, %i: i32, %a: f32, %b: f32) {
  // CHECK-NEXT: %v = opencl.vload_half4 %hp[%i] : !opencl.ptr<global, f16>
  // CHECK-NEXT: %c = opencl.vload_half4 %hc[%i] : !opencl.ptr<constant, f16>
  // CHECK-NEXT: %s = opencl.select_nonzero %v, %c, %v : vector<4xf32>
  // CHECK-NEXT: %t = opencl.select_nonzero %a, %b, %a : f32
  // CHECK-NEXT: opencl.vstore_half4 %s, %hp[%i] : !opencl.ptr<global, f16>
  // CHECK-NEXT: opencl.return
  opencl.kernel @halves(%hp: !opencl.ptr<global, f16>, %hc: !opencl.ptr<constant, f16>, %i: i32, %a: f32, %b: f32) {
    %v = opencl.vload_half4 %hp[%i] : !opencl.ptr<global, f16>
    %c = opencl.vload_half4 %hc[%i] : !opencl.ptr<constant, f16>
    %s = opencl.select_nonzero %v, %c, %v : vector<4xf32>
    %t = opencl.select_nonzero %a, %b, %a : f32
    opencl.vstore_half4 %s, %hp[%i] : !opencl.ptr<global, f16>
    opencl.return
  }

  // An SSA name without a hint takes its C name from arg_names, and a differing
  // arg_names survives the round trip.
  // CHECK-LABEL: opencl.kernel @renamed(%data: !opencl.ptr<global, f32>) {
  opencl.kernel @renamed(%0: !opencl.ptr<global, f32>) attributes {arg_names = ["data"]} {
    opencl.return
  }
  // CHECK-LABEL: opencl.kernel @renamed2(%x: !opencl.ptr<global, f32>) attributes {arg_names = ["data"]} {
  opencl.kernel @renamed2(%x: !opencl.ptr<global, f32>) attributes {arg_names = ["data"]} {
    opencl.return
  }

  opencl.kernel @copy_k(%src: !opencl.ptr<global, f32>, %dst: !opencl.ptr<global, f32>, %img: !opencl.image2d<read>, %n: i32, %a: f32) {
    opencl.return
  }

  // CHECK-LABEL: func.func @host()
  // CHECK-NEXT: %a = opencl.alloc_buffer : !opencl.buffer<1024xf32>
  // CHECK-NEXT: %b = opencl.alloc_buffer : !opencl.buffer<1024xf32>
  // CHECK-NEXT: %w = opencl.weight @conv1_weight : !opencl.buffer<9408xf32>
  // CHECK-NEXT: %i = opencl.alloc_image : !opencl.image<224x896, rgba_f16>
  // CHECK-NEXT: %n = arith.constant 1024 : i32
  // CHECK-NEXT: %f = arith.constant 2.500000e-01 : f32
  // CHECK-NEXT: opencl.launch @copy_k(%a, %b, %i, %n, %f) global [112, 112, 16] local [16, 4, 4] : (!opencl.buffer<1024xf32>, !opencl.buffer<1024xf32>, !opencl.image<224x896, rgba_f16>, i32, f32)
  // CHECK-NEXT: opencl.launch @copy_k(%a, %b, %i, %n, %f) global [1024] : (!opencl.buffer<1024xf32>, !opencl.buffer<1024xf32>, !opencl.image<224x896, rgba_f16>, i32, f32)
  // CHECK-NEXT: opencl.copy %a to %b : !opencl.buffer<1024xf32>
  // CHECK-NEXT: func.return
  func.func @host() {
    %a = opencl.alloc_buffer : !opencl.buffer<1024xf32>
    %b = opencl.alloc_buffer : !opencl.buffer<1024xf32>
    %w = opencl.weight @conv1_weight : !opencl.buffer<9408xf32>
    %i = opencl.alloc_image : !opencl.image<224x896, rgba_f16>
    %n = arith.constant 1024 : i32
    %f = arith.constant 0.25 : f32
    opencl.launch @copy_k(%a, %b, %i, %n, %f) global [112, 112, 16] local [16, 4, 4]
        : (!opencl.buffer<1024xf32>, !opencl.buffer<1024xf32>, !opencl.image<224x896, rgba_f16>, i32, f32)
    opencl.launch @copy_k(%a, %b, %i, %n, %f) global [1024]
        : (!opencl.buffer<1024xf32>, !opencl.buffer<1024xf32>, !opencl.image<224x896, rgba_f16>, i32, f32)
    opencl.copy %a to %b : !opencl.buffer<1024xf32>
    func.return
  }
}
