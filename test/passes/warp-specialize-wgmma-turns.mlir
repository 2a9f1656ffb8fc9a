// --warp-specialize='wgmma-turns=1': the consumer groups issue each K tile's
// WGMMA group in turn. Group g waits on turns[g] after its full wait, with the
// parity of the K tile's ring position (flipped for group 0, whose first wait
// passes on the fresh barrier); after its commit each of its warps arrives on
// the next group's turns barrier. Three stages: the position's parity needs
// the phase as well as the stage.
// RUN: wsc-opt --warp-specialize='num-stages=3 num-consumer-groups=2 producer=warpgroup wgmma-turns=1' --verify-pipeline %S/../../examples/matmul_v2.mlir | FileCheck %s
// Four stages, unrolled: the parity is the stage's alone (each pass checks
// the protocol of its output, --unroll-ring-buffer's too).
// RUN: wsc-opt --warp-specialize='num-stages=4 num-consumer-groups=2 producer=warpgroup wgmma-turns=1' --unroll-ring-buffer %S/../../examples/matmul_v2.mlir | FileCheck %s --check-prefix=UNROLLED
// A persistent kernel: the turns run on from one tile's K loop to the next.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-turns=1' --verify-pipeline %S/warp-specialize-persistent.mlir | FileCheck %s --check-prefix=PERSISTENT
// Refused: one group, ping-pong, and a K loop of two WGMMA groups ...
// RUN: not wsc-opt --warp-specialize='wgmma-turns=1' %S/../../examples/matmul_v2.mlir 2>&1 | FileCheck %s --check-prefix=ONE-GROUP
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup ping-pong=1 wgmma-turns=1' %S/warp-specialize-persistent.mlir 2>&1 | FileCheck %s --check-prefix=PING-PONG
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-turns=1' %S/warp-specialize-back-to-back.mlir 2>&1 | FileCheck %s --check-prefix=TWO-GROUPS
// ... and one that commits none.
// RUN: sed 's/"wsc.wgmma_commit_group"() : () -> ()//' %S/../../examples/matmul_v2.mlir | not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-turns=1' - 2>&1 | FileCheck %s --check-prefix=NO-GROUP

// CHECK: %[[FULL:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32}
// CHECK: %[[EMPTY:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 3 : i32}
// CHECK: %[[TURNS:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32}
// CHECK: role = "consumer", thread_begin = 0
// CHECK: scf.for {{.*}} iter_args(%[[S0:.*]] = %{{.*}}, %[[P0:.*]] = %{{.*}})
// CHECK: "wsc.mbarrier_wait"(%[[FULL]], %[[S0]], %[[P0]])
// CHECK: %[[LOW0:.*]] = arith.andi %[[S0]], %{{.*}} : index
// CHECK: %[[ODD0:.*]] = arith.cmpi ne, %[[LOW0]], %{{.*}} : index
// CHECK: %[[POS0:.*]] = arith.xori %[[ODD0]], %[[P0]] : i1
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[FIRST:.*]] = arith.xori %[[POS0]], %[[TRUE]] : i1
// CHECK: %[[G0:.*]] = arith.constant 0 : index
// CHECK: "wsc.mbarrier_wait"(%[[TURNS]], %[[G0]], %[[FIRST]])
// CHECK-NEXT: "wsc.wgmma_fence"
// CHECK-NEXT: "wsc.wgmma"
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK-NEXT: %[[G1:.*]] = arith.constant 1 : index
// CHECK-NEXT: "wsc.mbarrier_arrive"(%[[TURNS]], %[[G1]]) {per_warp}
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"(%[[EMPTY]], %[[S0]])
// CHECK: role = "consumer", thread_begin = 128
// CHECK: scf.for {{.*}} iter_args(%[[S1:.*]] = %{{.*}}, %[[P1:.*]] = %{{.*}})
// CHECK: %[[LOW1:.*]] = arith.andi %[[S1]], %{{.*}} : index
// CHECK: %[[ODD1:.*]] = arith.cmpi ne, %[[LOW1]], %{{.*}} : index
// CHECK: %[[POS1:.*]] = arith.xori %[[ODD1]], %[[P1]] : i1
// CHECK: %[[H1:.*]] = arith.constant 1 : index
// CHECK: "wsc.mbarrier_wait"(%[[TURNS]], %[[H1]], %[[POS1]])
// CHECK-NEXT: "wsc.wgmma_fence"
// CHECK-NEXT: "wsc.wgmma"
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK-NEXT: %[[H0:.*]] = arith.constant 0 : index
// CHECK-NEXT: "wsc.mbarrier_arrive"(%[[TURNS]], %[[H0]]) {per_warp}
// CHECK: role = "producer"
// CHECK-NOT: %[[TURNS]]
// CHECK: return

// UNROLLED: %[[TURNS:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32}
// UNROLLED: role = "consumer", thread_begin = 0
// UNROLLED: "wsc.mbarrier_wait"(%[[TURNS]]
// UNROLLED: "wsc.mbarrier_arrive"(%[[TURNS]]
// UNROLLED-COUNT-3: "wsc.mbarrier_wait"(%[[TURNS]]
// UNROLLED: role = "consumer", thread_begin = 128
// UNROLLED-COUNT-4: "wsc.mbarrier_wait"(%[[TURNS]]
// UNROLLED: role = "producer"

// PERSISTENT: %[[TURNS:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32}
// PERSISTENT: role = "consumer", thread_begin = 0
// PERSISTENT: scf.for
// PERSISTENT: scf.for {{.*}} iter_args(%[[S:.*]] = %{{.*}}, %[[P:.*]] = %{{.*}})
// PERSISTENT: "wsc.mbarrier_wait"(%[[TURNS]]
// PERSISTENT: "wsc.mbarrier_arrive"(%[[TURNS]]
// PERSISTENT: role = "consumer", thread_begin = 128
// PERSISTENT: "wsc.mbarrier_wait"(%[[TURNS]]
// PERSISTENT: "wsc.mbarrier_arrive"(%[[TURNS]]

// ONE-GROUP: error: --warp-specialize: wgmma-turns = 1 needs 2 or 4 consumer groups sharing each tile: one group has no other to take turns with
// PING-PONG: error: --warp-specialize: wgmma-turns = 1 needs 2 or 4 consumer groups sharing each tile: in ping-pong the groups already take whole tiles in turn
// TWO-GROUPS: error: --warp-specialize: wgmma-turns = 1 passes the turn on after a K tile's one WGMMA group; this K loop commits 2
// NO-GROUP: <stdin>:29:24: error: --warp-specialize: wgmma-turns = 1 passes the turn on after a K tile's one WGMMA group; this K loop commits 0
