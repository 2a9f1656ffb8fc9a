// RUN: wsc-opt --warp-specialize %s | FileCheck %s
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' --verify-pipeline %s | FileCheck %s --check-prefix=G2
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup ping-pong=1' --verify-pipeline %s | FileCheck %s --check-prefix=PP
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup ping-pong=1 wgmma-in-flight=1' --verify-pipeline %s | FileCheck %s --check-prefix=PP-FLIGHT
// RUN: not wsc-opt --warp-specialize=ping-pong=1 %s 2>&1 | FileCheck %s --check-prefix=PP-GROUPS
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup ping-pong=1' %S/../../examples/matmul_v2.mlir 2>&1 | FileCheck %s --check-prefix=PP-TILES

// A persistent V2: one block per SM walks the output tiles blockIdx.x,
// blockIdx.x + gridDim.x, ...; the tile loop carries the ring's (stage,
// phase) from one tile's K loop to the next.
func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %m = memref.dim %a, %c0 : memref<?x?xf16>
  %n = memref.dim %c, %c1 : memref<?x?xf32>
  %tiles_m = arith.ceildivui %m, %c128 : index
  %tiles_n = arith.ceildivui %n, %c128 : index
  %num_tiles = arith.muli %tiles_m, %tiles_n : index
  %bx = gpu.block_id x
  %grid = gpu.grid_dim x
  %false = arith.constant false
  %last_stage, %last_phase = scf.for %tile = %bx to %num_tiles step %grid
      iter_args(%tile_stage = %c0, %tile_phase = %false) -> (index, i1) {
    %row = arith.remui %tile, %tiles_m : index
    %col = arith.divui %tile, %tiles_m : index
    %m0 = arith.muli %row, %c128 : index
    %n0 = arith.muli %col, %c128 : index
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
        iter_args(%stage = %tile_stage, %phase = %tile_phase) -> (index, i1) {
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    scf.yield %stage_n, %phase_n : index, i1
  }
  return
}

// The consumer walks the tiles from full phase 0, with its own accumulator
// per tile; each tile's K loop starts where the previous one stopped.
// CHECK-LABEL: func.func @matmul
// CHECK:       [[EMPTY:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32}
// CHECK:       [[BX:%.*]] = gpu.block_id x
// CHECK:       [[GRID:%.*]] = gpu.grid_dim x
// CHECK:       [[ZERO:%.*]] = arith.constant 0 : index
// CHECK:       "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// CHECK:       [[FALSE:%.*]] = arith.constant false
// CHECK-NEXT:  scf.for [[TILE:%.*]] = [[BX]] to {{%.*}} step [[GRID]] iter_args([[S:%.*]] = [[ZERO]], [[P:%.*]] = [[FALSE]]) -> (index, i1) {
// CHECK:         arith.remui [[TILE]]
// CHECK:         [[ACC:%.*]] = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
// CHECK-NEXT:    [[K:%.*]]:2 = scf.for {{.*}} iter_args({{%.*}} = [[S]], {{%.*}} = [[P]]) -> (index, i1) {
// CHECK:           "wsc.mbarrier_wait"(%{{.*}})
// CHECK:           "wsc.wgmma"({{.*}}, [[ACC]])
// CHECK:           "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT:      "wsc.mbarrier_arrive"([[EMPTY]]
// CHECK:         "wsc.store"([[ACC]]
// CHECK-NEXT:    scf.yield [[K]]#0, [[K]]#1 : index, i1

// The producer walks the same tiles from empty phase 1 and counts its fills;
// its drain after the tile loop waits where fills + trip >= 4.
// CHECK:       "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32}
// CHECK-NEXT:  scf.if
// CHECK-NEXT:    [[NONE:%.*]] = arith.constant 0 : index
// CHECK-NEXT:    [[TRUE:%.*]] = arith.constant true
// CHECK-NEXT:  [[TILES:%.*]]:3 = scf.for {{%.*}} = [[BX]] to {{%.*}} step [[GRID]] iter_args({{%.*}} = [[ZERO]], {{%.*}} = [[TRUE]], [[FILLS:%.*]] = [[NONE]]) -> (index, i1, index) {
// CHECK-NOT:     wsc.acc_alloc
// CHECK:         [[PK:%.*]]:2 = scf.for
// CHECK:           "wsc.mbarrier_wait"([[EMPTY]]
// CHECK:           "wsc.tma_load"
// CHECK:         [[MORE:%.*]] = arith.addi [[FILLS]], %{{.*}} : index
// CHECK-NEXT:    scf.yield [[PK]]#0, [[PK]]#1, [[MORE]] : index, i1, index
// CHECK:       scf.for {{.*}} iter_args({{%.*}} = [[TILES]]#0, {{%.*}} = [[TILES]]#1)
// CHECK-NEXT:    arith.addi %{{.*}}, [[TILES]]#2 : index
// CHECK:         "wsc.mbarrier_wait"([[EMPTY]]

// Two consumer warpgroups each walk every tile, storing their 64 rows; the
// protocol check (--verify-pipeline) runs the block over four tiles.
// G2:     "wsc.role"() {{.*}}role = "consumer", thread_begin = 0 : i32}
// G2:     "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
// G2:     "wsc.role"() {{.*}}role = "consumer", thread_begin = 128 : i32}
// G2:     "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
// G2:     "wsc.role"() {max_registers = {{[0-9]+}} : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32}

// Ping-pong: each group takes every other tile of the block's walk, whole
// (128 rows), so each stage is released by one warpgroup (128 arrivals). The
// groups take turns through turn[0] and turn[1]: group 0's first wait passes
// on the fresh barrier (parity 1), group 1's waits for group 0's arrival
// after its K loop. After each tile a group steps its ring position past the
// other group's tile: k_tiles positions, the phase flipping once per wrap.
// PP:      [[FULL:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32}
// PP-NEXT: [[EMPTY:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32}
// PP-NEXT: [[TURN:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32}
// PP:      "wsc.role"() {{.*}}role = "consumer", thread_begin = 0 : i32}
// PP:      [[STEP0:%.*]] = arith.muli %grid_dim_x, %c2
// PP:      scf.for {{%.*}} = %block_id_x to {{%.*}} step [[STEP0]] iter_args({{.*}}, [[MINE0:%.*]] = %true) -> (index, i1, i1)
// PP:        "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
// PP:        "wsc.mbarrier_wait"([[TURN]], %c0{{.*}}, [[MINE0]])
// PP-NEXT:   [[K0:%.*]]:2 = scf.for
// PP:          "wsc.mbarrier_arrive"([[EMPTY]]
// PP:        "wsc.mbarrier_arrive"([[TURN]], %c1
// PP-NEXT:   "wsc.store"
// PP-NEXT:   [[POS0:%.*]] = arith.addi [[K0]]#0, [[KTILES:%.*]] : index
// PP:      "wsc.role"() {{.*}}role = "consumer", thread_begin = 128 : i32}
// PP:      [[FIRST1:%.*]] = arith.addi %block_id_x, %grid_dim_x
// PP:      [[SKIP:%.*]] = arith.addi %c0{{.*}}, [[KTILES]] : index
// PP:      scf.for {{%.*}} = [[FIRST1]] to {{%.*}} step {{%.*}} iter_args({{.*}}, [[MINE1:%.*]] = %false{{.*}}) -> (index, i1, i1)
// PP:        "wsc.mbarrier_wait"([[TURN]], %c1{{.*}}, [[MINE1]])
// PP:        "wsc.mbarrier_arrive"([[TURN]], %c0

// Ping-pong with a WGMMA group in flight: inside its turn a group leaves each
// K tile's group in flight and releases the previous K tile's stage; after
// its K loop it retires the last group and releases that stage, and only then
// hands the turn over and stores (its epilogue under the other group's K loop).
// PP-FLIGHT:      [[EMPTY:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32}
// PP-FLIGHT-NEXT: [[TURN:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32}
// PP-FLIGHT:      "wsc.role"() {{.*}}role = "consumer", thread_begin = 0 : i32}
// PP-FLIGHT:        "wsc.mbarrier_wait"([[TURN]], %c0
// PP-FLIGHT-NEXT:   scf.for [[K:%.*]] = %c0
// PP-FLIGHT:          "wsc.wgmma_wait_group"() {pending = 1 : i32}
// PP-FLIGHT:          [[LATER:%.*]] = arith.cmpi ugt, [[K]], %c0
// PP-FLIGHT-NEXT:     scf.if [[LATER]] {
// PP-FLIGHT:            "wsc.mbarrier_arrive"([[EMPTY]]
// PP-FLIGHT:        "wsc.wgmma_wait_group"() {pending = 0 : i32}
// PP-FLIGHT:        scf.if
// PP-FLIGHT:          "wsc.mbarrier_arrive"([[EMPTY]]
// PP-FLIGHT:        "wsc.mbarrier_arrive"([[TURN]], %c1
// PP-FLIGHT-NEXT:   "wsc.store"

// PP-GROUPS: warp-specialize-persistent.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --warp-specialize: ping-pong needs num-consumer-groups = 2, not 1
// PP-TILES: matmul_v2.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --warp-specialize: ping-pong needs a persistent kernel: the consumer groups take turns over the tiles of a tile loop, and this kernel has none
