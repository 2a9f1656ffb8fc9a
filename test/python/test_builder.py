"""The kernel builder (wsc.builder): the explicit kernels of examples/ are what
--warp-specialize makes of the simple one, every op has a builder method, and
mistakes in a kernel's code raise errors located at the user's line."""

import difflib
import json
import re
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    PRODUCER_INITIAL_PHASE,
    BuildError,
    BuildTypeError,
    BuildWarning,
    KernelBuilder,
    bf16,
    f16,
    f32,
    structure,
)
from wsc.codegen import find_ptxas
from wsc.compiler import CompileError
from wsc.device import hopper_gpu_visible, run_artifact
from wsc.runtime import load_artifact
from wsc.runtime.artifact import ArtifactError, SizesError
from wsc.runtime.memory import Inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The examples import their shared runner and each other by bare name.
sys.path.insert(0, str(EXAMPLES))

from v1_tma_wgmma import matmul_v1  # noqa: E402
from v2_ring_buffer import matmul_v2  # noqa: E402
from v3_auto import matmul_v3_auto  # noqa: E402
from v3_warp_specialized import matmul_v3  # noqa: E402
from v4_two_consumers import matmul_v4  # noqa: E402
from v5_one_group_in_flight import matmul_v5  # noqa: E402
from v7_split_k import matmul_split_k  # noqa: E402
from v8_fused_epilogue import matmul_fused_epilogue  # noqa: E402

#: A kernel built to show some ops, which stores no result (a BuildWarning).
writes_nothing = pytest.mark.filterwarnings("ignore::wsc.builder.BuildWarning")

RAGGED = {"m": 1000, "n": 1333, "k": 520}


def assert_same_structure(explicit, automatic):
    ours, theirs = structure(explicit.module), structure(automatic.module)
    diff = "\n".join(
        difflib.unified_diff(
            ours.splitlines(), theirs.splitlines(), "explicit", "--warp-specialize", lineterm=""
        )
    )
    assert ours == theirs, diff


def line_of(marker: str) -> int:
    """The line of this file that carries `marker` (a comment on the offending call)."""
    lines = Path(__file__).read_text().splitlines()
    return next(
        number
        for number, text in enumerate(lines, 1)
        if text.rstrip().endswith(marker) and "line_of(" not in text
    )


# The automatic level builds what the explicit one writes -----------------------------------


@pytest.mark.parametrize("num_stages", [1, 2, 4])
def test_explicit_v3_is_what_warp_specialize_makes_of_v2(num_stages):
    assert_same_structure(matmul_v3(num_stages=num_stages), matmul_v3_auto(num_stages=num_stages))


def test_explicit_v4_is_two_consumer_groups_with_a_producer_warpgroup():
    simple = matmul_v2(num_stages=4, block_n=256, prefetch=False)
    assert_same_structure(
        matmul_v4(), simple.warp_specialize(num_consumer_groups=2, producer="warpgroup")
    )


def test_explicit_v5_is_one_wgmma_group_in_flight():
    simple = matmul_v2(num_stages=4, block_n=256, prefetch=False)
    assert_same_structure(
        matmul_v5(),
        simple.warp_specialize(num_consumer_groups=2, producer="warpgroup", wgmma_in_flight=1),
    )


def test_structure_tells_different_kernels_apart():
    seed = structure(matmul_v3().module)
    assert structure(matmul_v3(block_n=64).module) != seed
    assert structure(matmul_v3(num_stages=3).module) != seed
    # V4 and V5 differ only in the wait_group count and which stage is released.
    assert structure(matmul_v4().module) != structure(matmul_v5().module)


def test_structure_ignores_names_placement_and_unused_pure_ops():
    kernel = matmul_v3()
    text = str(kernel.module)
    with kernel.context:
        from mlir import ir

        reparsed = ir.Module.parse(text)
    assert structure(reparsed) == structure(kernel.module)


def test_kernel_lineage_records_each_pass():
    auto = matmul_v3_auto()
    assert [k.made_by for k in auto.lineage()] == ["builder", "warp-specialize"]
    assert "wsc.role" not in str(auto.lineage()[0]) and "wsc.role" in str(auto)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_stages": "3"}, "warp-specialize: option num_stages expects int, got '3'"),
        ({"num_stages": True}, "warp-specialize: option num_stages expects int, got True"),
        (
            {"producer": "bogus"},
            "warp-specialize: option producer must be one of warp, warpgroup, got 'bogus'",
        ),
        (
            {"num_consumer_groups": 3},
            "warp-specialize: option num_consumer_groups must be one of 1, 2, 4, got '3'",
        ),
        (
            {"producer": "warp", "consumer_registers": 232},
            "warp-specialize: producer_registers and consumer_registers apply to producer = "
            "warpgroup",
        ),
        (
            {"num_stages": -1},
            "warp-specialize: option num_stages must be 0 (as written) to",
        ),
        (
            {"num_stagez": 4},
            "warp-specialize has no option 'num_stagez'; its options: num_stages, "
            "num_consumer_groups, producer,",
        ),
    ],
)
def test_pass_options_given_in_python_are_checked_in_their_keywords_at_the_call(options, message):
    """As on the command line, but named as the keywords the author wrote and
    located at the call."""
    with pytest.raises(BuildError) as error:
        matmul_v2(prefetch=False).warp_specialize(**options)
    assert message in str(error.value)
    assert str(error.value).startswith(f"{__file__}:")


# Every op, and what the builder emits ------------------------------------------------------


@writes_nothing
def test_every_wsc_op_has_a_builder_method():
    from wsc import dialect

    kb = KernelBuilder("every_op", num_warps=5, grid=[("m", 128), ("n", 64)])
    a, b, c, d, e = (
        kb.global_tensor(f16),
        kb.global_tensor(f16),
        kb.global_tensor(f16),
        kb.global_tensor(f16),
        kb.global_tensor(f16),
    )
    sa = kb.shared_tensor(f16, [2, 128, 64])
    sb = kb.shared_tensor(f16, [2, 64, 64])
    sc = kb.shared_tensor(f16, [1, 128, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
    empty = kb.mbarrier.alloc(arrival_count=128, num_barriers=2)
    kb.sync()
    with kb.thread_group(thread_begin=0, num_threads=128, role="consumer", max_registers=232):
        acc = kb.register_tensor(f32, [128, 64])
        for it in kb.range(0, a.shape[1], 64, stages=2, phase=CONSUMER_INITIAL_PHASE):
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            kb.wgmma.fence()
            kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            kb.mbarrier.arrive(empty[it.stage])
        second = kb.register_tensor(f32, [128, 64])
        kb.wgmma.fence()
        kb.wgmma.mma(kb.cast(acc, f16), sb[0], second)  # A from registers
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.assign(second, second * 0.5)
        kb.store_global(c, kb.cast(second, f16), [kb.block_idx.x * 128, kb.block_idx.y * 64])
        kb.store_shared(sc[0], kb.cast(acc, f16))
        kb.fence_proxy_async()
        kb.sync()
        with kb.single_thread():
            kb.tma.shared_to_global(sc[0], d, [0, 0])
            kb.tma.store_wait(0)
        kb.sync()
        kb.shared_to_global(sc[0], e, [0, 0])
    with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
        for it in kb.range(0, a.shape[1], 64, stages=2, phase=PRODUCER_INITIAL_PHASE):
            kb.mbarrier.wait(empty[it.stage], phase=it.phase)
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(
                    full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
                )
                kb.tma.global_to_shared(a, sa[it.stage], [0, it.offset], full[it.stage])
                kb.tma.global_to_shared(b, sb[it.stage], [0, it.offset], full[it.stage])
        kb.drain(empty, after=it)
    kernel = kb.finish()
    built = {
        line.split(" = ", 1)[1].split("(")[0].split("{")[0]
        for line in structure(kernel.module).splitlines()
    }
    # The cluster ops, from a kernel in clusters; the split-K ops, from V7;
    # register-tile math and loads (of global and shared memory), from an
    # epilogue of its own.
    math = KernelBuilder("math", grid=[("m", 64)])
    out, bias = math.global_tensor(f32), math.global_tensor(f32, rank=1)
    tile = math.register_tensor(f32, [64, 64]) + math.load_tile(out, [0, 0], [64, 64])
    tile = tile * math.broadcast(bias, 0, [64, 64]) * math.scalar()
    tile = math.where(math.indices([64, 64], along="cols") > tile, tile, 0.0)
    tile = tile + math.load_shared(math.shared_tensor(f16, [1, 64, 64])[0])
    tile = tile - math.col_max(math.row_max(tile), rows=16)
    math.store_global(out, math.exp2(tile - math.row_max(tile) * 2.0), [0, 0])
    # A matrix of a batch, copied by TMA.
    batched = KernelBuilder("batched", grid=[("m", 64), ("n", 64), ("batch", 1)])
    x = batched.global_tensor(f16, rank=3)
    ring = batched.shared_tensor(f16, [1, 64, 64])
    arrived = batched.mbarrier.alloc(arrival_count=1, num_barriers=1)
    batched.sync()
    with batched.single_thread():
        batched.mbarrier.arrive_and_expect_tx(arrived[0], ring[0].nbytes)
        batched.tma.global_to_shared(x[batched.block_idx.z], ring[0], [0, 0], arrived[0])
    text = str(kernel) + str(v3_in_clusters_of_two()) + str(matmul_split_k()) + str(math.finish())
    text += str(batched.finish())
    emitted = {name for name in dialect.OP_NAMES if f'"{name}"' in text}
    assert emitted == set(dialect.OP_NAMES), set(dialect.OP_NAMES) - emitted
    assert "wsc.tma_store" in built and "wsc.cast" in built


def test_a_batched_elementwise_kernel_reads_its_batch_with_tma(tmp_path):
    """y[z] = relu(s x[z]) for each matrix z of a batch, each tile copied by
    TMA from x[z] into shared memory and read into registers: it compiles
    (the protocol check names the ring after the batch's tensor) and writes
    an artifact for any batch."""
    kb = KernelBuilder("batched_relu", grid=[("a_dim1", 64), ("a_dim2", 128), ("a_dim0", 1)])
    x, y = kb.global_tensor(f16, rank=3), kb.global_tensor(f16, rank=3)
    s = kb.scalar(default=2.0)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 128
    ring = kb.shared_tensor(f16, [1, 64, 128])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    with kb.single_thread():
        kb.mbarrier.arrive_and_expect_tx(full[0], ring[0].nbytes)
        kb.tma.global_to_shared(x[kb.block_idx.z], ring[0], [row, col], mbarrier=full[0])
    kb.mbarrier.wait(full[0], phase=CONSUMER_INITIAL_PHASE)
    kb.store_shared(ring[0], kb.cast(kb.relu(kb.load_shared(ring[0]) * s), f16))
    kb.fence_proxy_async()
    kb.sync()
    with kb.single_thread():
        kb.tma.shared_to_global(ring[0], y[kb.block_idx.z], [row, col])
        kb.tma.store_wait(0)
    compiled = kb.finish().compile()
    sizes = {"a_dim0": 3, "a_dim1": 100, "a_dim2": 256, "b_dim0": 3}
    artifact = load_artifact(compiled.write_artifact(tmp_path / "art", **sizes))
    assert artifact.grid == (2, 2, 3)
    assert artifact.tensors["b"].shape == (3, 100, 256)


def v3_in_clusters_of_two(per_warp: bool = False):
    """V3 with 64x64 tiles in clusters of two blocks along M that share B's
    tile: each block multicasts half of it and releases every stage to both
    blocks' empty barriers (with `per_warp`, once per consumer warp)."""
    kb = KernelBuilder("v3_cluster", num_warps=5, grid=[("m", 64), ("n", 64)], cluster_size=2)
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    sa = kb.shared_tensor(f16, [2, 64, 64])
    sb = kb.shared_tensor(f16, [2, 64, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
    empty = kb.mbarrier.alloc(arrival_count=2 * (4 if per_warp else 128), num_barriers=2)
    kb.cluster_sync()
    # Block x of a cluster along x: its cluster's first block plus its rank.
    row = (kb.block_idx.x // 2 * 2 + kb.cluster_rank) * 64
    with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
        acc = kb.register_tensor(f32, [64, 64])
        for it in kb.range(0, a.shape[1], 64, stages=2, phase=CONSUMER_INITIAL_PHASE):
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            kb.wgmma.fence()
            kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            kb.mbarrier.arrive(empty[it.stage], every_cta=True, per_warp=per_warp)
        kb.store_global(c, acc, [row, kb.block_idx.y * 64])
    with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
        for it in kb.range(0, a.shape[1], 64, stages=2, phase=PRODUCER_INITIAL_PHASE):
            kb.mbarrier.wait(empty[it.stage], phase=it.phase)
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(
                    full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
                )
                kb.tma.global_to_shared(a, sa[it.stage], [row, it.offset], full[it.stage])
                kb.tma.global_to_shared(
                    b,
                    sb[it.stage],
                    [kb.block_idx.y * 64, it.offset],
                    full[it.stage],
                    multicast=True,
                )
        kb.drain(empty, after=it)
    return kb.finish()


@pytest.mark.parametrize("per_warp", [False, True])
def test_a_cluster_kernel_passes_the_protocol_check_and_a_plain_release_does_not(per_warp):
    from mlir import ir

    from wsc.diagnostics import PassError
    from wsc.protocol import check_protocol

    kernel = v3_in_clusters_of_two(per_warp)
    with kernel.context:
        check_protocol(kernel.module.operation, max_k_tiles=6)
        broken = ir.Module.parse(str(kernel).replace("every_cta, ", "").replace(" {every_cta}", ""))
        with pytest.raises(PassError, match="deadlock"):
            check_protocol(broken.operation, max_k_tiles=6)


def test_multicast_needs_clusters():
    def build():
        kb = KernelBuilder("k")
        b = kb.global_tensor(f16)
        sb = kb.shared_tensor(f16, [2, 64, 64])
        full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
        kb.sync()
        kb.tma.global_to_shared(b, sb[0], [0, 0], full[0], multicast=True)  # error: no cluster

    error = build_error(build)
    assert error.where.line == line_of("# error: no cluster")
    assert "multicast=True needs a kernel in clusters" in str(error)


def test_ring_loops_of_one_ring_must_count_the_same_stages():
    def build():
        kb = KernelBuilder("k", num_warps=5, grid=[("m", 128), ("n", 128)])
        a = kb.global_tensor(f16)
        k = a.shape[1]
        sa = kb.shared_tensor(f16, [4, 128, 64])
        full = kb.mbarrier.alloc(arrival_count=1, num_barriers=4)
        empty = kb.mbarrier.alloc(arrival_count=128, num_barriers=4)
        kb.sync()
        with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
            for it in kb.range(0, k, 64, stages=3, phase=CONSUMER_INITIAL_PHASE):  # ring of 3
                kb.mbarrier.wait(full[it.stage], phase=it.phase)
                kb.mbarrier.arrive(empty[it.stage])
        with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
            for it in kb.range(0, k, 64, stages=4, phase=PRODUCER_INITIAL_PHASE):  # ring of 4
                kb.mbarrier.wait(empty[it.stage], phase=it.phase)
                with kb.single_thread():
                    kb.mbarrier.arrive_and_expect_tx(full[it.stage], sa[it.stage].nbytes)
                    kb.tma.global_to_shared(a, sa[it.stage], [0, it.offset], full[it.stage])
        kb.finish()

    error = build_error(build)
    assert error.where.line == line_of("# ring of 4")
    assert "this ring loop counts 4 stages" in str(error)
    assert "also indexed by a ring loop of 3 stages" in str(error)
    assert f"{__file__}:{line_of('# ring of 3')}:" in str(error)
    assert "note: the ring loop of 3 stages" in str(error)


@writes_nothing
def test_a_ring_with_padded_rows_is_only_a_tma_destination_and_a_kn_b_operand():
    kb = KernelBuilder("k", grid=[("m", 128), ("n", 112)])
    a, b = kb.global_tensor(f16), kb.global_tensor(f16)
    sa = kb.shared_tensor(f16, [1, 128, 64])
    sb = kb.shared_tensor(f16, [1, 64, 112], pad_rows=True)
    # 112 f16 columns (224 bytes, 32-byte atoms) are stored as two 128-byte atoms.
    assert (sb.stored_cols, sb[0].cols, sb[0].nbytes) == (128, 112, 64 * 128 * 2)
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    with kb.single_thread():
        kb.mbarrier.arrive_and_expect_tx(full[0], sa[0].nbytes + sb[0].nbytes)
        kb.tma.global_to_shared(a, sa[0], [0, 0], full[0])
        kb.tma.global_to_shared(b, sb[0], [0, 0], full[0])
    kb.mbarrier.wait(full[0], phase=CONSUMER_INITIAL_PHASE)
    acc = kb.register_tensor(f32, [128, 112])
    kb.wgmma.fence()
    kb.wgmma.mma(sa[0], sb[0], acc)
    with pytest.raises(BuildError, match="rows are stored padded to 128 columns"):
        kb.load_shared(sb[0])
    with pytest.raises(BuildError, match="rows are stored padded to 128 columns"):
        kb.store_shared(sb[0], kb.cast(kb.register_tensor(f32, [64, 112]), f16))
    with pytest.raises(BuildError, match="wgmma.mma b, transposed: the ring's rows are stored"):
        kb.wgmma.mma(sa[0], sb[0].transpose(), kb.register_tensor(f32, [128, 64]))
    assert "memref<1x64x128xf16, 3>" in str(kb.finish())


def test_a_single_thread_cannot_arrive_for_its_warp():
    def build():
        kb = KernelBuilder("k")
        empty = kb.mbarrier.alloc(arrival_count=4, num_barriers=1)
        kb.sync()
        with kb.single_thread():
            kb.mbarrier.arrive(empty[0], per_warp=True)  # error: one thread

    error = build_error(build)
    assert error.where.line == line_of("# error: one thread")
    assert "per_warp=True inside single_thread" in str(error)


def test_ops_carry_the_users_file_and_line():
    kernel = matmul_v1()
    with kernel.context:
        text = kernel.module.operation.get_asm(enable_debug_info=True)
    assert f'loc("{EXAMPLES / "v1_tma_wgmma.py"}"' in text


def test_index_arithmetic_folds_identities_and_keeps_constants_right():
    kb = KernelBuilder("k", num_warps=4)
    a = kb.global_tensor(f16)
    size = a.shape[0]
    assert (size + 0) is size and (size * 1) is size and (0 + size) is size
    product = (3 * size).value.owner
    assert product.name == "arith.muli" and product.operands[0] == size.value
    assert str(product.operands[1].owner.attributes["value"]) == "3 : index"


# Errors located in the user's code -----------------------------------------------------------


def build_error(build) -> BuildError:
    with pytest.raises(BuildError) as caught:
        build()
    assert caught.value.where is not None and caught.value.where.filename == __file__
    return caught.value


def test_wrong_dtype_names_the_call():
    def build():
        kb = KernelBuilder("k")
        kb.global_tensor("f64")  # error: dtype

    error = build_error(build)
    assert isinstance(error, TypeError) and isinstance(error, BuildTypeError)
    assert error.where.line == line_of("# error: dtype")
    assert "dtype must be one of f16, bf16, f8E4M3FN, f32, got 'f64'" in str(error)
    assert str(error).startswith(f"{__file__}:{error.where.line}:")


@pytest.mark.parametrize("name", ["gemm-bias", "my kernel", "1k", "", "_"])
def test_a_kernel_name_that_is_no_ptx_identifier_is_refused_where_given(name):
    def build():
        KernelBuilder(name)  # error: name

    error = build_error(build)
    assert error.where.line == line_of("# error: name")
    assert f"name {name!r} is not a PTX identifier" in str(error)


def test_a_stage_attribute_asked_of_the_whole_ring_says_to_index_it():
    def build():
        kb = KernelBuilder("k")
        sb = kb.shared_tensor(f16, [2, 64, 64])
        sb.transpose()  # error: whole ring

    error = build_error(build)
    assert isinstance(error, BuildTypeError)
    assert error.where.line == line_of("# error: whole ring")
    assert "'transpose' is a stage's, not the shared tensor's: index the stage first" in str(error)


def test_a_register_tile_in_a_message_reads_as_its_dtype_and_shape():
    def build():
        kb = KernelBuilder("k")
        acc = kb.register_tensor(f32, [64, 64])
        kb.shared_tensor(f16, [acc, 64, 64])

    assert "got [RegisterTile(f32, [64, 64]), 64, 64]" in str(build_error(build))


def test_copy_between_dtypes_is_a_type_error():
    def build():
        kb = KernelBuilder("k")
        a = kb.global_tensor(f16)
        sa = kb.shared_tensor(bf16, [1, 64, 64])
        full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
        kb.sync()
        kb.tma.global_to_shared(a, sa[0], [0, 0], mbarrier=full[0])  # error: copy dtype

    error = build_error(build)
    assert isinstance(error, TypeError) and error.where.line == line_of("# error: copy dtype")
    assert "src 'a' is f16 but dst is bf16" in str(error)


def test_a_tile_that_breaks_the_swizzle_rule():
    def build():
        kb = KernelBuilder("k")
        kb.shared_tensor(f16, [4, 128, 24])  # error: tile rule

    error = build_error(build)
    assert error.where.line == line_of("# error: tile rule")
    assert "24 x 2 B = 48 B is not a multiple of 32 B" in str(error)


def test_a_tile_of_more_rows_than_a_tma_box():
    def build():
        kb = KernelBuilder("k")
        kb.shared_tensor(f16, [1, 512, 64])  # error: box rows

    error = build_error(build)
    assert error.where.line == line_of("# error: box rows")
    assert "more than 256 rows (the TMA box)" in str(error)


def test_a_stored_tile_may_have_rows_of_narrower_swizzle_spans():
    """192-byte rows are three 64-byte swizzle atoms: a staging tile the
    epilogue stores into and copies out, as the matmul's block_n = 96."""
    kb = KernelBuilder("k")
    assert kb.shared_tensor(f16, [1, 128, 96]).shape == (1, 128, 96)


@writes_nothing
def test_a_load_into_rows_wider_than_the_swizzle_span_copies_atom_by_atom():
    """256-byte rows are two 128-byte swizzle atoms: the copy is one TMA box
    per atom (a "kn" B stage of 128 columns)."""
    kb = KernelBuilder("k")
    a = kb.global_tensor(f16)
    sb = kb.shared_tensor(f16, [1, 64, 128])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    with kb.single_thread():
        kb.mbarrier.arrive_and_expect_tx(full[0], sb[0].nbytes)
        kb.tma.global_to_shared(a, sb[0], [0, 0], full[0])
    assert "wsc.tma_load" in str(kb.finish())  # and the verifier takes it


def test_store_shared_checks_the_stage_tile():
    def build():
        kb = KernelBuilder("k")
        sc = kb.shared_tensor(f16, [1, 128, 64])
        kb.sync()
        acc = kb.register_tensor(f16, [64, 64])
        kb.store_shared(sc[0], acc)  # error: staging shape

    error = build_error(build)
    assert error.where.line == line_of("# error: staging shape")
    assert (
        "the tile is [64, 64] but dst has 128 rows (rows of a stage: ring[stage][row:row + 64])"
        in str(error)
    )


def test_a_tma_store_copies_a_whole_stage():
    def build():
        kb = KernelBuilder("k")
        c = kb.global_tensor(f16)
        sc = kb.shared_tensor(f16, [1, 128, 64])
        kb.tma.shared_to_global(sc[0][0:64], c, [0, 0])  # error: part of a stage

    error = build_error(build)
    assert error.where.line == line_of("# error: part of a stage")
    assert "src must be a whole stage tile" in str(error)


def test_a_coalesced_store_keeps_the_dtype():
    def build():
        kb = KernelBuilder("k")
        c = kb.global_tensor(bf16)
        sc = kb.shared_tensor(f16, [1, 128, 64])
        kb.shared_to_global(sc[0], c, [0, 0])  # error: coalesced dtype

    error = build_error(build)
    assert error.where.line == line_of("# error: coalesced dtype")
    assert "shared_to_global: src is f16 but dst" in str(error)


def test_an_accumulator_that_is_no_wgmma_shape():
    def build():
        KernelBuilder("k").register_tensor(f32, [96, 128])  # error: acc shape

    error = build_error(build)
    assert error.where.line == line_of("# error: acc shape")
    assert "rows a multiple of 64" in str(error)


def test_wgmma_shapes_must_chain():
    def build():
        kb = KernelBuilder("k")
        sa = kb.shared_tensor(f16, [1, 128, 64])
        sb = kb.shared_tensor(f16, [1, 128, 32])
        acc = kb.register_tensor(f32, [128, 128])
        kb.wgmma.mma(sa[0], sb[0].transpose(), acc)  # error: chain

    error = build_error(build)
    assert error.where.line == line_of("# error: chain")
    assert "A is [128, 64] (a [M, K] stage), B is [32, 128]" in str(error)


def test_wait_on_a_barrier_never_allocated_in_this_kernel():
    def build():
        other = KernelBuilder("other")
        foreign = other.mbarrier.alloc(arrival_count=1, num_barriers=2)
        other.sync()
        kb = KernelBuilder("k")
        kb.mbarrier.wait(foreign[0], phase=CONSUMER_INITIAL_PHASE)  # error: foreign barrier

    error = build_error(build)
    assert error.where.line == line_of("# error: foreign barrier")
    assert "never allocated in this kernel" in str(error)


def test_wait_on_something_that_is_no_barrier():
    def build():
        kb = KernelBuilder("k")
        full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
        kb.sync()
        kb.mbarrier.wait(full, phase=CONSUMER_INITIAL_PHASE)  # error: whole array

    error = build_error(build)
    assert isinstance(error, TypeError) and error.where.line == line_of("# error: whole array")
    assert "pick one barrier of the array" in str(error)


def test_a_barrier_used_before_the_sync_that_publishes_it():
    def build():
        kb = KernelBuilder("k")
        full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)  # allocated here
        kb.mbarrier.arrive(full[0])  # error: unsynced

    error = build_error(build)
    assert error.where.line == line_of("# error: unsynced")
    assert f"allocated at {__file__}:{line_of('# allocated here')}" in str(error)
    assert "before a block-wide kb.sync()" in str(error)


def test_barriers_are_allocated_at_the_top_level():
    def build():
        kb = KernelBuilder("k", num_warps=5)
        with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
            kb.mbarrier.alloc(arrival_count=1, num_barriers=2)  # error: nested alloc

    error = build_error(build)
    assert error.where.line == line_of("# error: nested alloc")
    assert "top level of the kernel" in str(error) and "thread group 'producer'" in str(error)


def test_a_constant_stage_outside_the_ring():
    def build():
        kb = KernelBuilder("k")
        sa = kb.shared_tensor(f16, [4, 64, 64])
        return sa[4]  # error: stage range

    error = build_error(build)
    assert error.where.line == line_of("# error: stage range")
    assert "stage 4 is outside the shared tensor's 4 stages" in str(error)


def test_storing_without_the_cast():
    def build():
        kb = KernelBuilder("k")
        c = kb.global_tensor(f16)
        acc = kb.register_tensor(f32, [64, 64])
        kb.store_global(c, acc, [0, 0])  # error: store dtype

    error = build_error(build)
    assert error.where.line == line_of("# error: store dtype")
    assert "kb.cast(tile, 'f16')" in str(error)


def test_thread_groups_are_whole_warps_inside_the_block():
    def build():
        kb = KernelBuilder("k", num_warps=5)
        with kb.thread_group(thread_begin=128, num_threads=64, role="producer"):  # error: range
            pass

    error = build_error(build)
    assert error.where.line == line_of("# error: range")
    assert "threads [128, 192) are not inside the block of 160 threads" in str(error)


def test_branching_on_a_run_time_value_in_python():
    def build():
        kb = KernelBuilder("k")
        a = kb.global_tensor(f16)
        for it in kb.range(0, a.shape[1], 64, stages=1, phase=CONSUMER_INITIAL_PHASE):
            if it.index > 0:  # error: truth value
                pass

    error = build_error(build)
    assert error.where.line == line_of("# error: truth value")
    assert "kb.if_" in str(error)


def test_leaving_a_ring_loop_early():
    def build():
        kb = KernelBuilder("k")
        a = kb.global_tensor(f16)
        for _ in kb.range(0, a.shape[1], 64, stages=1, phase=CONSUMER_INITIAL_PHASE):  # loop
            break
        kb.finish()  # error: left early

    error = build_error(build)
    assert error.where.line == line_of("# error: left early")
    assert f"ring loop opened at {__file__}:{line_of('# loop')}" in str(error)


def test_unroll_must_be_the_ring_size_and_apply_to_every_loop():
    def wrong_count():
        kb = KernelBuilder("k")
        a = kb.global_tensor(f16)
        kb.range(
            0, a.shape[1], 64, stages=4, phase=PRODUCER_INITIAL_PHASE, unroll=2
        ).__next__()  # error: unroll count

    error = build_error(wrong_count)
    assert "unroll=2 differs from stages=4" in str(error)

    def one_loop_only():
        kb = KernelBuilder("k", num_warps=5)
        a = kb.global_tensor(f16)
        with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
            for _ in kb.range(0, a.shape[1], 64, stages=2, phase=CONSUMER_INITIAL_PHASE, unroll=2):
                pass
        with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
            for _ in kb.range(0, a.shape[1], 64, stages=2, phase=PRODUCER_INITIAL_PHASE):  # plain
                pass
        kb.finish()

    error = build_error(one_loop_only)
    assert error.where.line == line_of("# plain")
    assert "unrolls every ring loop of a kernel" in str(error)


def test_verifier_errors_point_at_the_users_line():
    def build():
        kb = KernelBuilder("k", num_warps=5)
        sa = kb.shared_tensor(f16, [1, 64, 64])
        sb = kb.shared_tensor(f16, [1, 64, 64])
        with kb.thread_group(thread_begin=32, num_threads=128, role="consumer"):
            acc = kb.register_tensor(f32, [64, 64])  # error: warpgroup
            kb.wgmma.mma(sa[0], sb[0].transpose(), acc)
        kb.finish()

    error = build_error(build)
    assert error.where.line == line_of("# error: warpgroup")
    assert "makes a register tile, which whole warpgroups hold; its role covers threads" in str(
        error
    )


def test_register_tile_math_under_single_thread_is_refused():
    """One elected thread holds its own fragment of a tile, so a store or a
    row reduction there would write or reduce that fragment alone."""

    def build():
        kb = KernelBuilder("k", num_warps=4, grid=[("a_dim0", 64)])
        x, y = kb.global_tensor(f16), kb.global_tensor(f16)
        row = kb.block_idx.x * 64
        t = kb.load_tile(x, [row, 0], [64, 64])
        with kb.single_thread():
            kb.store_global(y, kb.cast(t, f16), [row, 0])  # error: elected thread
        kb.finish()

    error = build_error(build)
    assert error.where.line == line_of("# error: elected thread")
    assert "a register tile under a wsc.elect" in str(error)


def test_a_value_used_outside_its_role_is_located():
    def build():
        kb = KernelBuilder("k", num_warps=5)
        a = kb.global_tensor(f16)
        full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
        kb.sync()
        with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
            for it in kb.range(0, a.shape[1], 64, stages=2, phase=CONSUMER_INITIAL_PHASE):
                kb.mbarrier.wait(full[it.stage], phase=it.phase)
        with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
            kb.mbarrier.arrive(full[it.stage])  # error: dominance
        kb.finish()

    error = build_error(build)
    assert error.where.line == line_of("# error: dominance")
    assert "does not dominate" in str(error)
    assert "exists only inside it: use it there, or store it there and load it after" in str(error)


def test_pass_errors_point_into_the_kernels_source():
    simple = matmul_v2(prefetch=False)
    with pytest.raises(CompileError) as caught:
        simple.warp_specialize(num_consumer_groups=4)
    message = str(caught.value)
    assert f"{EXAMPLES / 'v2_ring_buffer.py'}:" in message
    assert "cannot be split over 4 consumer warpgroups" in message


def test_the_prefetching_v2_is_no_input_for_warp_specialize():
    with pytest.raises(CompileError, match="v2_ring_buffer.py:.*--warp-specialize"):
        matmul_v2().warp_specialize()


# Compiling and artifacts ------------------------------------------------------------------------


def test_artifact_of_a_built_kernel(tmp_path):
    compiled = matmul_v3().compile(dump_dir=tmp_path / "ir")
    directory = compiled.write_artifact(tmp_path / "v3", **RAGGED)
    artifact = load_artifact(directory)
    assert artifact.grid == (8, 11, 1) and artifact.block == (160, 1, 1)
    assert artifact.tensors["a"].shape == (1000, 520)
    assert artifact.tensors["b"].shape == (1333, 520)
    assert artifact.tensors["c"].shape == (1000, 1333) and artifact.tensors["c"].dtype == "f32"
    meta = json.loads((directory / "kernel.json").read_text())
    assert meta["sizes"] == RAGGED and meta["check"] == "matmul"
    assert meta["tensors"]["b"] == {
        "role": "input",
        "dtype": "f16",
        "shape": ["n", "k"],
        "layout": "row_major",
    }
    assert meta["grid"] == ["cdiv(m, 128)", "cdiv(n, 128)"]
    assert meta["config"] == {"block_m": 128, "block_n": 128}
    assert [stage.name for stage in compiled.result.stages][:3] == [
        "input",
        "unroll-ring-buffer",
        "convert-wsc-to-nvvm",
    ]
    assert (tmp_path / "ir" / "01-unroll-ring-buffer.mlir").exists()


def test_a_cluster_kernel_launches_whole_clusters(tmp_path):
    """1000 rows are 16 tiles of 64 (8 clusters), 950 are 15: the launch
    takes 16 blocks along x, as a partial cluster cannot launch."""
    compiled = v3_in_clusters_of_two().compile()
    for m in (1000, 950):
        artifact = load_artifact(compiled.write_artifact(tmp_path / str(m), m=m, n=1333, k=520))
        assert artifact.cluster == 2 and artifact.grid == (16, 21, 1)


def test_a_split_k_artifact_describes_its_workspace(tmp_path):
    """V7's grid has a z axis of splits, and its two workspace arguments are
    sized by the output tiles: 4 x 11 tiles of 64 x 128 for 200 x 1333."""
    compiled = matmul_split_k(splits=4).compile()
    directory = compiled.write_artifact(tmp_path, m=200, n=1333, k=4104)
    artifact = load_artifact(directory)
    assert artifact.grid == (4, 11, 4)
    tiles = 4 * 11
    assert artifact.tensors["d"].shape == (tiles * 64 * 4 * 128,)
    assert artifact.tensors["d"].dtype == "f32" and not artifact.tensors["d"].zeroed
    assert artifact.tensors["e"].shape == (tiles * 64,) and artifact.tensors["e"].zeroed
    meta = json.loads((directory / "kernel.json").read_text())
    assert meta["tensors"]["e"]["role"] == "workspace"
    assert meta["config"]["splits"] == 4
    assert [p["name"] for p in meta["params"] if p["kind"] == "pointer"] == ["c", "d", "e"]


def test_a_global_tensor_never_loaded_or_stored_is_located():
    """Lowering keeps only the tensors a kernel reads or writes: a declared but
    unused one would drop out of the launch's parameters unannounced."""

    def build():
        kb = KernelBuilder("k", grid=[("m", 64)])
        c = kb.global_tensor(f32)
        kb.global_tensor(f16)  # error: unused
        kb.store_global(c, kb.register_tensor(f32, [64, 64]), [0, 0])
        kb.finish()

    error = build_error(build)
    assert error.where.line == line_of("# error: unused")
    assert "global tensor 'b' (f16)" in str(error) and "is never loaded or stored" in str(error)


def test_a_kernel_that_writes_nothing_warns_at_its_finish():
    kb = KernelBuilder("k", grid=[("m", 64)])
    x = kb.global_tensor(f32)
    kb.load_tile(x, [0, 0], [64, 64])
    with pytest.warns(BuildWarning, match="kernel 'k' writes no global tensor") as caught:
        kb.finish()  # warning: nothing stored
    assert caught[0].filename == __file__ and caught[0].lineno == line_of(
        "# warning: nothing stored"
    )


def test_register_tiles_combine_element_by_element():
    kb = KernelBuilder("epilogue", grid=[("m", 64), ("n", 64)])
    c = kb.global_tensor(f32)
    acc = kb.register_tensor(f32, [64, 64])
    out = kb.max(kb.relu(acc * 0.5 + 1.0) - kb.exp2(-acc), 0.0)
    assert out.shape == (64, 64) and out.dtype == f32
    kb.store_global(c, out, [0, 0])
    text = str(kb.finish())
    for kind in ("mul", "add", "sub", "max"):
        assert '"wsc.tile_binary"' in text and f'kind = "{kind}"' in text
    for kind in ("relu", "exp2", "neg"):
        assert f'kind = "{kind}"' in text
    assert text.count('"wsc.tile_fill"') == 3  # 0.5, 1.0 and 0.0


def test_register_tile_math_misuse_is_located():
    def build():
        kb = KernelBuilder("k", grid=[("m", 64)])
        half = kb.register_tensor(f16, [64, 64])
        return half * 2.0  # error: f16 math

    error = build_error(build)
    assert error.where.line == line_of("# error: f16 math")
    assert "element-wise math takes f32 tiles, this one is f16" in str(error)

    def mismatched():
        kb = KernelBuilder("k", grid=[("m", 64)])
        kb.register_tensor(f32, [64, 64]) + kb.register_tensor(f32, [64, 128])  # error: shapes

    error = build_error(mismatched)
    assert error.where.line == line_of("# error: shapes")
    assert "tile add: tiles of shapes [64, 64], [64, 128]: element-wise math takes" in str(error)

    def vector_of_other_rows():
        kb = KernelBuilder("k", grid=[("m", 64)])
        kb.register_tensor(f32, [128, 64]) * kb.register_tensor(f32, [64, 1])  # error: rows

    error = build_error(vector_of_other_rows)
    assert error.where.line == line_of("# error: rows")
    assert "or row vectors [rows, 1] of its rows" in str(error)

    def half_vector():
        KernelBuilder("k", grid=[("m", 64)]).register_tensor(f16, [64, 1])  # error: f16 vector

    error = build_error(half_vector)
    assert error.where.line == line_of("# error: f16 vector")
    assert "or 1 for an f32 row vector, got [64, 1] (f16)" in str(error)


def test_a_transposed_store_is_marked_and_its_flag_checked():
    kb = KernelBuilder("k", grid=[("m", 16), ("n", 64)])
    c = kb.global_tensor(f32)
    tile = kb.register_tensor(f32, [64, 16])
    with pytest.raises(BuildTypeError, match="transpose must be a bool, got 'yes'"):
        kb.store_global(c, tile, [0, 0], transpose="yes")
    kb.store_global(c, tile, [0, 0], transpose=True)
    assert '"wsc.store"' in (text := str(kb.finish())) and "{transpose}" in text


def test_register_tiles_read_from_global_memory():
    kb = KernelBuilder(
        "epilogue",
        grid=[("m", 64), ("n", 64)],
        check="matmul",
        check_config={"epilogue": {"bias": "b"}},
    )
    c, bias, residual = kb.global_tensor(f32), kb.global_tensor(f16, rank=1), kb.global_tensor(bf16)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    total = kb.broadcast(bias, col, [64, 64]) + kb.load_tile(residual, [row, col], [64, 64])
    scaled = total * kb.broadcast(bias, row, [64, 64], along="rows")
    out = kb.tanh(kb.erf(kb.rsqrt(kb.log2(scaled))))
    assert out.shape == (64, 64) and out.dtype == f32
    kb.store_global(c, out, [row, col])
    kernel = kb.finish()
    text = str(kernel)
    assert text.count('"wsc.tile_broadcast"') == 2 and '{along = "rows"}' in text
    assert '"wsc.tile_load"' in text
    for kind in ("log2", "rsqrt", "erf", "tanh"):
        assert f'kind = "{kind}"' in text
    assert kernel.check_config == {"epilogue": {"bias": "b"}}


def test_rows_reduce_to_their_max_and_sum():
    kb = KernelBuilder("softmax_step", grid=[("m", 64)])
    out = kb.global_tensor(f32)
    scores = kb.register_tensor(f32, [64, 64])
    # The rows of an online softmax: exp2 of the scores less their row max, over the row sum.
    row_max = kb.row_max(scores)
    assert row_max.shape == (64, 1)  # a row vector, broadcast along the rows below
    weights = kb.exp2(scores - row_max)
    kb.store_global(out, weights * kb.rsqrt(kb.row_sum(weights)), [0, 0])
    text = str(kb.finish())
    assert '{kind = "max"}' in text and '{kind = "sum"}' in text
    assert text.count('"wsc.tile_row_reduce"') == 2
    # The two reductions and the rsqrt of the sum are row vectors.
    assert text.count("-> !wsc.acc<array<i64: 64, 1>, f32>") == 3
    half = KernelBuilder("k", grid=[("m", 64)])
    with pytest.raises(BuildTypeError, match="row_max: element-wise math takes f32 tiles"):
        half.row_max(half.register_tensor(f16, [64, 64]))


def test_a_causal_mask_selects_by_row_and_column_index():
    """kb.where(cols > rows, -inf, scores): attention's causal mask, from
    index tiles counted from the block's first row and column."""
    kb = KernelBuilder("masked", grid=[("m", 64), ("n", 64)])
    out = kb.global_tensor(f32)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    scores = kb.register_tensor(f32, [64, 64])
    rows = kb.indices([64, 64], along="rows", start=row)
    cols = kb.indices([64, 64], along="cols", start=col)
    masked = kb.where(cols > rows, float("-inf"), scores)
    kept = kb.where(kb.compare(scores, "ne", scores), 0.0, masked)  # NaN to 0
    kb.store_global(out, kb.where(kept <= 1.0, kept, 1.0), [row, col])
    text = str(kb.finish())
    assert text.count('"wsc.tile_iota"') == 2 and '{along = "cols"}' in text
    assert [f'predicate = "{p}"' in text for p in ("gt", "ne", "le")] == [True] * 3
    assert text.count('"wsc.tile_select"') == 3


def test_select_misuse_is_located():
    kb = KernelBuilder("k", grid=[("m", 64)])
    x, wide = kb.register_tensor(f32, [64, 64]), kb.register_tensor(f32, [64, 128])
    with pytest.raises(BuildTypeError, match="where condition: expected a comparison of tiles"):
        kb.where(True, x, x)
    with pytest.raises(
        BuildError, match=r"where: tiles of shapes \[64, 64\], \[64, 128\], \[64, 128\], \[64, 64\]"
    ):
        kb.where(x < 0.0, wide, x)
    with pytest.raises(BuildTypeError, match="at least one operand must be a register tile"):
        kb.where(kb.compare(1.0, "lt", 2.0), 0.0, 1.0)
    with pytest.raises(BuildError, match="compare: predicate must be one of 'lt', 'le'"):
        kb.compare(x, "<", x)
    with pytest.raises(BuildError, match="indices: along must be one of 'rows', 'cols'"):
        kb.indices([64, 64], along="depth")


def test_copies_and_expect_tx_outside_single_thread_are_refused():
    """Every thread of the group would issue them: 32 copies and arrivals a warp."""
    kb = KernelBuilder("k", grid=[("a_dim0", 64)])
    a, c = kb.global_tensor(f16), kb.global_tensor(f16)
    ring = kb.shared_tensor(f16, [1, 64, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    for call, what, why in (
        (
            lambda: kb.mbarrier.arrive_and_expect_tx(full[0], ring[0].nbytes),
            "mbarrier.arrive_and_expect_tx",
            "it arrives once",
        ),
        (
            lambda: kb.tma.global_to_shared(a, ring[0], [0, 0], full[0]),
            "tma.global_to_shared",
            "it is one copy",
        ),
        (
            lambda: kb.tma.shared_to_global(ring[0], c, [0, 0]),
            "tma.shared_to_global",
            "it is one copy",
        ),
    ):
        with pytest.raises(BuildError) as error:
            call()
        assert (
            f"{what} is issued by one thread ({why}): call it inside `with kb.single_thread():`"
            in str(error.value)
        )
        assert error.value.where.filename == __file__


def test_a_block_index_along_an_axis_the_launch_lacks_is_refused():
    """It would be 0 in every block: one tile computed where many were meant.
    The axes counted are the launch's: grid's pairs, a split-K workspace's
    splits, a persistent kernel's x alone, a cluster's x."""

    def kernel(grid, read, **options):
        kb = KernelBuilder("k", grid=grid, **options)
        x, y = kb.global_tensor(f32), kb.global_tensor(f32)
        row = getattr(kb.block_idx, read) * 64  # the read
        kb.store_global(y, kb.relu(kb.load_tile(x, [row, 0], [64, 64])), [row, 0])
        return kb

    two = [("a_dim0", 64), ("a_dim1", 64)]
    for grid, read, options, how in (
        ([("a_dim0", 64)], "y", {}, "the launch has 1 axes: grid=[('a_dim0', 64)]"),
        ([], "x", {}, "the launch has 0 axes: grid=[]"),
        (two, "y", {"persistent": True}, "a persistent kernel's launch has only x"),
    ):
        with pytest.raises(BuildError) as error:
            kernel(grid, read, **options).finish()
        assert f"kb.block_idx.{read} would be 0 in every block ({how}" in str(error.value)
        assert error.value.where.line == line_of("# the read")
    kernel([], "x", cluster_size=2).finish(verify=False)  # x counts whole clusters
    kernel(two, "y").finish(verify=False)


@writes_nothing
def test_python_control_flow_on_tiles_is_refused_and_arithmetic_reads_as_python():
    """An `if` or max() on a tile comparison would pick one branch for every
    element: a located BuildTypeError. abs(), division by a number and numpy
    numbers work as in Python; what has no tile op says what to write."""
    kb = KernelBuilder("k", grid=[("m", 64)])
    x = kb.register_tensor(f32, [64, 64])
    with pytest.raises(BuildTypeError) as error:
        if x > 0.0:
            pass
    assert "no truth value while the kernel is built" in str(error.value)
    assert "kb.where(comparison, on_true, on_false)" in str(error.value)
    assert error.value.where.line == line_of("if x > 0.0:")
    with pytest.raises(BuildTypeError, match="no truth value"):
        max(x, 0.0)
    with pytest.raises(BuildTypeError, match="no truth value"):
        assert x == x
    with pytest.raises(BuildTypeError, match="a register tile has no truth value") as error:
        if x:
            pass
    assert error.value.where.line == line_of("if x:")
    alpha = kb.scalar()
    with pytest.raises(BuildTypeError, match=f"kernel argument '{alpha.name}' has no truth"):
        if alpha:
            pass
    assert (x * alpha).shape == (64, 64)
    rows = kb.block_idx.x * 64
    with pytest.raises(BuildTypeError, match="is not a Python int") as error:
        for _ in range(rows):
            pass
    assert "kb.range(" in str(error.value) and error.value.where.line == line_of("in range(rows):")
    with pytest.raises(BuildTypeError, match="is not a Python int"):
        int(rows)
    zeroed = kb.where(x != x, 0.0, kb.where(x == 0.0, 1.0, x))
    assert zeroed.shape == (64, 64)
    assert abs(x).shape == (64, 64)
    halved = x / 2
    assert halved.shape == (64, 64) and (x * np.float32(0.5)).shape == (64, 64)
    assert (x / x).shape == (1.0 / x).shape == (64, 64)
    with pytest.raises(BuildTypeError, match="a register tile divided by zero") as error:
        x / 0
    assert error.value.where.line == line_of("x / 0")
    with pytest.raises(BuildTypeError, match=r"write t \* t"):
        x**2
    text = str(kb.finish(verify=False))
    assert 'kind = "max"' in text and 'kind = "neg"' in text and 'kind = "div"' in text
    assert 'predicate = "eq"' in text and 'predicate = "ne"' in text


def test_register_tile_loads_misuse_is_located():
    kb = KernelBuilder("k", grid=[("m", 64)])
    matrix, vector = kb.global_tensor(f16), kb.global_tensor(f16, rank=1)
    with pytest.raises(BuildError, match="broadcast: 'a' has rank 2; broadcast reads a vector"):
        kb.broadcast(matrix, 0, [64, 64])
    with pytest.raises(BuildError, match="load_tile: 'b' has rank 1; load_tile reads a matrix"):
        kb.load_tile(vector, [0, 0], [64, 64])
    with pytest.raises(BuildError, match="along must be one of 'rows', 'cols', got 'diagonal'"):
        kb.broadcast(vector, 0, [64, 64], along="diagonal")
    with pytest.raises(BuildTypeError, match=r"shape must be \[rows, cols\], got \[64\]"):
        kb.load_tile(matrix, [0, 0], [64])
    with pytest.raises(BuildError, match="rank must be 1, 2 or 3, got 4"):
        kb.global_tensor(f16, rank=4)
    with pytest.raises(BuildError, match="check_config describes the kernel to a check"):
        KernelBuilder("k", check_config={"epilogue": {}})


def test_a_check_config_is_checked_where_it_is_given():
    """A misspelt key or a value the check would refuse is a BuildError at
    the KernelBuilder line, not a check that silently ignores it at run time."""

    def reference(a):
        return a

    for check, config, message in (
        (
            reference,
            {"tolerence": 1e-2},
            "check_config: key 'tolerence' is not one check 'reference' reads (input_scale, "
            "reference_arguments, tolerance)",
        ),
        (reference, {"tolerance": -1}, "check_config: tolerance must be a positive number"),
        (reference, {"input_scale": "big"}, "check_config: input_scale must be a positive number"),
        (
            reference,
            {"reference_arguments": [1]},
            "check_config: reference_arguments must map argument names to values",
        ),
        ("matmul", {"epilog": {}}, "key 'epilog' is not one check 'matmul' reads (epilogue)"),
        ("matmul", {"epilogue": {"scale": "e"}}, "check_config: epilogue: unknown keys scale"),
        (
            "matmul",
            {"epilogue": {"activation": "tanh"}},
            "epilogue: activation must be one of relu, gelu, gelu_tanh, silu, got 'tanh'",
        ),
        ("matmul", {"epilogue": {"bias": 3}}, "epilogue: bias must name an argument of the kernel"),
        ("matmul", {"epilogue": ["bias"]}, "epilogue must be a dict of alpha, bias"),
    ):
        with pytest.raises(BuildError) as error:
            KernelBuilder("k", check=check, check_config=config)
        assert message in str(error.value) and str(error.value).startswith(f"{__file__}:")
    KernelBuilder("k", check=reference, check_config={"tolerance": 1e-2, "input_scale": 2})


def test_split_k_misuse_is_located():
    kb = KernelBuilder("bad", grid=[("m", 64), ("n", 64)])
    with pytest.raises(BuildError, match=r"splits must be an int from 2 to 64, got 1"):
        kb.split_k.workspace(1)
    with pytest.raises(BuildError, match=r"slots must be None or an int >= 1, got 0"):
        kb.split_k.workspace(2, slots=0)
    workspace = kb.split_k.workspace(2)
    with pytest.raises(BuildError, match="the kernel already has one"):
        kb.split_k.workspace(2)
    half = kb.register_tensor(f16, [64, 64])
    with pytest.raises(BuildTypeError, match="partial sums are f32, the tile is f16"):
        kb.split_k.store(workspace, half, 0, kb.block_idx.z)
    kb.split_k.store(workspace, kb.register_tensor(f32, [64, 64]), 0, kb.block_idx.z)
    with pytest.raises(BuildError, match="holds 64x64 partial tiles, not 64x128"):
        kb.split_k.reduce(workspace, kb.register_tensor(f32, [64, 128]), 0)
    unused = KernelBuilder("unused", grid=[("m", 64)])
    unused.split_k.workspace(2)
    with pytest.raises(BuildError, match="never receives a partial sum"):
        unused.finish()


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_spills_are_an_error_unless_the_author_allows_them():
    """V8's GELU epilogue on 64x256 accumulators makes ptxas spill: without
    allow_spills that is an error at the author's accumulator, naming the
    tiles a thread holds."""
    with pytest.raises(CompileError) as caught:
        matmul_fused_epilogue(block_n=256, num_stages=3, allow_spills=False).compile()
    message = str(caught.value)
    assert "v8_fused_epilogue.py:" in message.splitlines()[0]
    assert "ptxas spilled registers to local memory" in message
    assert "holding register tiles of 64x256 f32 (128 registers)" in message
    assert "KernelBuilder(allow_spills=True)" in message
    compiled = matmul_fused_epilogue(block_n=256, num_stages=3).compile()
    assert compiled.result.ptxas.spill_stores > 0


def test_a_wgmma_beyond_the_blocks_register_budget_is_located():
    """Four 64x256 consumer groups and a producer warpgroup: ptxas gives each
    of the 640 threads 96 registers, too few for a 128-register accumulator's
    WGMMA (ptxas would stop with C7602)."""
    kernel = matmul_v2(block_m=256, block_n=256, prefetch=False).warp_specialize(
        num_stages=2, num_consumer_groups=4, producer="warpgroup"
    )
    with pytest.raises(CompileError, match="ptxas gives each thread of a 640-thread block 96"):
        kernel.compile()


def test_artifact_needs_the_sizes_the_kernel_reads(tmp_path):
    compiled = matmul_v1().compile()
    with pytest.raises(ValueError, match="reads sizes k, m, n; got m, n"):
        compiled.write_artifact(tmp_path, m=128, n=128)


@pytest.fixture
def hopper():
    if not hopper_gpu_visible():
        pytest.skip("needs a Hopper GPU")


@pytest.mark.cuda
@pytest.mark.parametrize(
    "build", [matmul_v1, matmul_v2, matmul_v3, matmul_v3_auto, matmul_v4, matmul_v5, matmul_split_k]
)
def test_examples_are_correct_on_the_gpu(hopper, tmp_path, build):
    compiled = build().compile()
    for name, sizes in (("ragged", RAGGED), ("short-k", {"m": 256, "n": 384, "k": 40})):
        report = run_artifact(compiled.write_artifact(tmp_path / name, **sizes), bench=False)
        assert report["ok"] and report["nan_count"] == 0, report


def relu_reference(a):
    return np.maximum(a, 0.0)


def relu_kernel(check) -> KernelBuilder:
    """b = relu(a), tile by tile, checked by `check`."""
    kb = KernelBuilder("relu", grid=[("a_dim0", 64), ("a_dim1", 64)], check=check)
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    kb.store_global(y, kb.relu(kb.load_tile(x, [row, col], [64, 64])), [row, col])
    return kb


def test_a_grid_counts_tiles_of_a_size_the_kernel_reads():
    """A grid axis named after no size the kernel reads is refused when it
    compiles (sizes are named by lowering), at the KernelBuilder line."""
    kb = KernelBuilder("relu", grid=[("a_dim_0", 64), ("a_dim1", 64)])  # the grid
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    kb.store_global(y, kb.relu(kb.load_tile(x, [row, col], [64, 64])), [row, col])
    kernel = kb.finish()
    with pytest.raises(BuildError) as error:
        kernel.compile()
    assert "grid: the kernel reads no size 'a_dim_0'; it reads a_dim0, a_dim1" in str(error.value)
    assert error.value.where.line == line_of("# the grid")


def test_a_reference_must_take_the_kernel_s_arguments_by_name():
    """The check calls the reference with the inputs by name (a, b, ...): a
    parameter named otherwise is refused where the reference was given."""

    def reference(x):
        return np.maximum(x, 0.0)

    kb = relu_kernel(reference)
    with pytest.raises(BuildError) as error:
        kb.finish()
    assert "check: reference 'reference' takes x: x names no argument of the kernel" in str(
        error.value
    )
    assert "(a)" in str(error.value)
    assert str(error.value).startswith(f"{__file__}:")


def test_a_reference_must_take_every_input_and_scalar():
    """The check passes every input and scalar by name: a reference that
    leaves one out, or takes only positional arguments, could never be
    called; **rest takes what it does not name."""

    def relu_scaled(check):
        kb = KernelBuilder("relu", grid=[("a_dim0", 64), ("a_dim1", 64)], check=check)
        x, y = kb.global_tensor(f32), kb.global_tensor(f32)
        s = kb.scalar(default=2.0)
        row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
        kb.store_global(y, kb.relu(kb.load_tile(x, [row, col], [64, 64]) * s), [row, col])
        return kb

    def forgets_the_scalar(a):
        return np.maximum(a, 0.0)

    def positional(*args):
        return args[0]

    for reference, untaken in ((forgets_the_scalar, "c"), (positional, "a, c")):
        with pytest.raises(BuildError) as error:
            relu_scaled(reference).finish()
        assert f"reference '{reference.__name__}' does not take {untaken}: it is called" in str(
            error.value
        )

    def takes_the_rest(a, **rest):
        return np.maximum(a * rest["c"], 0.0)

    relu_scaled(takes_the_rest).finish()


def test_a_reference_cannot_take_an_output():
    """The outputs are what the reference returns, not what it is given: a
    parameter named after one is refused when the kernel is finished."""

    def reference(a, b):
        return np.maximum(a, 0.0)

    kb = relu_kernel(reference)
    with pytest.raises(BuildError) as error:
        kb.finish()
    message = str(error.value)
    assert "takes b: b names the kernel's output, whose values it returns" in message
    assert "by name (a)" in message

    def reference(a, b, zz):
        return np.maximum(a, 0.0)

    with pytest.raises(BuildError) as error:
        relu_kernel(reference).finish()
    assert (
        "takes b, zz: b names the kernel's output, whose values it returns; zz names no "
        "argument of the kernel; it is called" in str(error.value)
    )


def test_a_reference_beside_the_kernel_travels_in_its_artifacts(tmp_path, monkeypatch):
    """The author's reference function is the artifacts' check: `wsc run
    --check` compares the kernel's output with it (here a host computation
    stands in for the GPU: right, then wrong)."""
    import wsc.runtime.run_cli as run_cli
    from wsc.runtime.checks import find_check
    from wsc.runtime.memory import to_float64

    directory = (
        relu_kernel(relu_reference)
        .finish()
        .compile()
        .write_artifact(tmp_path, a_dim0=100, a_dim1=70)
    )
    meta = json.loads((directory / "kernel.json").read_text())
    assert meta["check"] == "reference"
    assert meta["config"]["reference"]["function"] == "relu_reference"
    artifact = load_artifact(directory)
    assert find_check(artifact).tolerance == 1e-4

    class Host:  # memory played by numpy arrays
        kind = "host"

        def inputs(self, specs, scale, seed):
            rng = np.random.default_rng(seed)
            hosts = {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in specs}
            return Inputs({n: h.copy() for n, h in hosts.items()}, hosts)

        def empty(self, shape, dtype):
            return np.empty(shape, np.float32)

        def poison(self, array, dtype):
            array[...] = np.nan

        def float64(self, array, dtype):
            return to_float64(array, dtype)

        def nan_count(self, array, dtype):
            return int(np.isnan(array).sum())

        def intact(self, inputs):
            return all(np.array_equal(h, inputs.arrays[n]) for n, h in inputs.hosts.items())

    class Relu:
        device = type("Device", (), {"ordinal": 0, "current": lambda self: nullcontext()})()

        def __init__(self, slope):
            self.artifact, self.slope = artifact, slope

        def prepare(self, a, b):
            slope = self.slope
            return type(
                "Launch", (), {"launch": lambda self: np.copyto(b, np.where(a > 0, a, slope * a))}
            )()

        def synchronize(self, stream=None, timeout_s=60.0):
            pass

    monkeypatch.setattr(run_cli, "make_memory", lambda backend, device: Host())
    assert run_cli.evaluate(Relu(0.0))["ok"]
    report = run_cli.evaluate(Relu(0.5))  # a leaky relu is not the reference
    assert not report["ok"] and report["rel_err"] > 0.1


def test_a_reference_must_stand_alone():
    offset = 1.0

    def shifted(a):
        return a + offset

    with pytest.raises(BuildError, match="reference 'shifted' uses offset from outside it"):
        relu_kernel(shifted)
    with pytest.raises(BuildTypeError, match="a lambda has no name or source of its own"):
        relu_kernel(lambda a: a)


def test_a_row_vector_read_from_a_row_of_a_matrix_has_its_columns_sizes(tmp_path):
    """A row vector read transposed (a scale per row from a row of a
    [K blocks, rows] matrix) spans the matrix's columns, not its rows: the
    artifact gives that dim the tile's rows' size."""
    kb = KernelBuilder("scale", grid=[("c_dim1", 64), ("a_dim1", 64)])
    x, y, scales_t = kb.global_tensor(f32), kb.global_tensor(f32), kb.global_tensor(f32)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    per_row = kb.load_tile(scales_t, [3, row], [64, 1], transpose=True)
    kb.store_global(y, kb.load_tile(x, [row, col], [64, 64]) * per_row, [row, col])
    kb.finish().compile().write_artifact(tmp_path, c_dim1=1000, a_dim1=520, c_dim0=7)
    shapes = {name: spec.shape for name, spec in load_artifact(tmp_path).tensors.items()}
    assert shapes == {"a": (1000, 520), "b": (1000, 520), "c": (7, 1000)}


def test_row_vectors_are_read_from_global_memory():
    """A scale per row, a scalar and a column of a matrix as row vectors
    [rows, 1], combined with a tile of their rows; compiled without spills."""
    # The rows of x, y and per_row are one size, named after per_row's length:
    # the first of them the kernel reads.
    kb = KernelBuilder("scale", grid=[("d_dim0", 64), ("a_dim1", 64)])
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    scale, per_row = kb.global_tensor(f16, rank=1), kb.global_tensor(f16, rank=1)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    vectors = [
        kb.broadcast(per_row, row, [64, 1], along="rows"),
        kb.broadcast(scale, 0, [64, 1], along="cols"),
        kb.load_tile(x, [row, 0], [64, 1]),
    ]
    assert [vector.shape for vector in vectors] == [(64, 1)] * 3
    tile = kb.load_tile(x, [row, col], [64, 64]) * vectors[0] * vectors[1] + vectors[2]
    kb.store_global(y, tile, [row, col])
    kernel = kb.finish()
    assert str(kernel).count("-> !wsc.acc<array<i64: 64, 1>, f32>") == 3
    kernel.compile()


def test_a_run_time_size_is_an_f32_row_vector_in_tile_math():
    """x.shape[1] in element-wise math is the row vector of the size (a
    wsc.tile_iota counted from it), on either side of every operator and in
    comparisons; a size divided by a size is an index division (//)."""
    kb = KernelBuilder("k", grid=[("m", 64)])
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    t = kb.load_tile(x, [kb.block_idx.x * 64, 0], [64, 64])
    width = x.shape[1]
    mean = kb.row_sum(t * t) / width
    assert mean.shape == (64, 1)
    scaled = width * t - t / (mean + 1.0)
    masked = kb.where(kb.indices(t.shape, along="cols") >= width, 0.0, scaled)
    assert masked.shape == (64, 64)
    with pytest.raises(BuildTypeError, match="divides with //") as error:
        width / width
    assert error.value.where.line == line_of("width / width")
    kb.store_global(y, masked, [kb.block_idx.x * 64, 0])
    text = str(kb.finish())
    assert text.count('"wsc.tile_iota"(%dim') == 3 and text.count('kind = "div"') == 2


def rows_scaled_reference(a):
    mean = (a * a).sum(axis=1, keepdims=True) / a.shape[1]
    return a / (mean + 1.0) + 1.0 / (np.abs(a) + 2.0)


def rows_scaled_kernel() -> KernelBuilder:
    """b = a / (mean of a^2 along its row + 1) + 1 / (|a| + 2), rows of at most
    64 elements: division by tiles and by the run-time row length."""
    kb = KernelBuilder("rows_scaled", grid=[("a_dim0", 64)], check=rows_scaled_reference)
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    row = kb.block_idx.x * 64
    t = kb.load_tile(x, [row, 0], [64, 64])
    mean = kb.row_sum(t * t) / x.shape[1]
    kb.store_global(y, t / (mean + 1.0) + 1.0 / (abs(t) + 2.0), [row, 0])
    return kb


def row_softmax_reference(a):
    powers = np.exp2(a - a.max(axis=1, keepdims=True))
    return powers / powers.sum(axis=1, keepdims=True)


def row_softmax_kernel() -> KernelBuilder:
    """b = the base-2 softmax of each row of a, rows of at most 64 elements:
    the elements past a row's end read as -inf, so that they add nothing to
    the max or to the sum of powers (read as 0, each would add 2^-max)."""
    kb = KernelBuilder("row_softmax", grid=[("a_dim0", 64)], check=row_softmax_reference)
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    row = kb.block_idx.x * 64
    t = kb.load_tile(x, [row, 0], [64, 64], fill=float("-inf"))
    powers = kb.exp2(t - kb.row_max(t))
    kb.store_global(y, powers / kb.row_sum(powers), [row, 0])
    return kb


def test_a_tile_load_reads_its_fill_outside_the_tensor():
    """fill= is the value of the elements outside the tensor: an f32
    attribute of wsc.tile_load, the register's value before the predicated
    load in the PTX (an f16 element's where f16 holds it, e.g. -inf, else
    selected after widening); 0 (no attribute) by default."""
    kernel = row_softmax_kernel().finish()
    assert "fill = 0xFF800000 : f32" in str(kernel)
    assert re.search(r"mov\.f32 %r\d+, 0fFF800000; @p ld\.global", kernel.compile().ptx)
    kb = KernelBuilder("k", grid=[("a_dim0", 64)])
    x, h, y = kb.global_tensor(f32), kb.global_tensor(f16), kb.global_tensor(f32)
    plain = kb.load_tile(x, [0, 0], [64, 64])
    negative = kb.load_tile(h, [0, 0], [64, 64], transpose=True, fill=np.float32(-np.inf))
    tenth = kb.load_tile(h, [0, 0], [64, 1], fill=0.1)
    kb.store_global(y, plain + negative * tenth, [0, 0])
    kernel = kb.finish()
    assert str(kernel).count("fill = ") == 2
    ptx = kernel.compile().ptx
    assert re.search(r"mov\.b16 %rs\d+, 0xFC00; @p ld\.global", ptx)
    assert re.search(r"selp\.f32\s+%r\d+, %r\d+, 0f3DCCCCCD", ptx)


def test_a_fill_must_be_a_number():
    kb = KernelBuilder("k", grid=[("a_dim0", 64)])
    x = kb.global_tensor(f32)
    with pytest.raises(BuildTypeError, match=r'fill must be a number .*float\("-inf"\)') as error:
        kb.load_tile(x, [0, 0], [64, 64], fill="-inf")
    assert error.value.where.line == line_of('fill="-inf")')
    with pytest.raises(BuildTypeError, match="fill 1000* is beyond any float"):
        kb.load_tile(x, [0, 0], [64, 64], fill=10**400)


@pytest.mark.cuda
@pytest.mark.parametrize("build", [rows_scaled_kernel, row_softmax_kernel])
def test_row_kernels_are_correct_on_the_gpu(hopper, tmp_path, build):
    """Tile division (rows_scaled) and a fill of -inf (row_softmax) on rows
    of 50 elements, shorter than the 64-column tile."""
    compiled = build().finish().compile()
    artifact = compiled.write_artifact(tmp_path / "rows", a_dim0=999, a_dim1=50)
    report = run_artifact(artifact, bench=False)
    assert report["ok"] and report["nan_count"] == 0, report


def test_write_artifact_computes_the_derived_sizes_left_out(tmp_path):
    """A size given as a rule of derived_sizes need not be given too; one
    given against its rule is refused."""
    kb = KernelBuilder("scaled", grid=[("a_dim0", 64)])
    x, w, y = kb.global_tensor(f32), kb.global_tensor(f32, rank=1), kb.global_tensor(f32)
    row = kb.block_idx.x * 64
    scale = kb.broadcast(w, 0, [64, 1], along="cols")  # w[0] in every row
    kb.store_global(y, kb.load_tile(x, [row, 0], [64, 64]) * scale, [row, 0])
    compiled = kb.finish().compile()
    rule = {"b_dim0": "1"}
    artifact = load_artifact(
        compiled.write_artifact(tmp_path / "a", a_dim0=100, a_dim1=40, derived_sizes=rule)
    )
    assert artifact.sizes == {"a_dim0": 100, "a_dim1": 40, "b_dim0": 1}
    with pytest.raises(SizesError, match="size b_dim0 follows from the others, 1 = 1; got 2"):
        compiled.write_artifact(tmp_path / "b", a_dim0=100, a_dim1=40, b_dim0=2, derived_sizes=rule)


def test_a_reference_imports_only_numpy_and_math():
    """A reference importing another module would fail only when a check
    runs it: refused where it is given; numpy and math imports pass."""

    def imports_scipy(a):
        import scipy.special

        return scipy.special.expit(a)

    def imports_numpy(a):
        from math import sqrt

        import numpy

        return numpy.maximum(a, 0.0) * sqrt(1.0)

    with pytest.raises(BuildError, match="uses import scipy.special from outside it"):
        relu_kernel(imports_scipy).finish()
    relu_kernel(imports_numpy).finish()


def test_a_negative_constant_index_is_refused_where_given():
    def build():
        kb = KernelBuilder("k", grid=[("a_dim0", 64)])
        x = kb.global_tensor(f16)
        kb.load_tile(x, [kb.block_idx.x * 64, -64], [64, 64])  # error: negative

    error = build_error(build)
    assert error.where.line == line_of("# error: negative")
    assert "load_tile col: an offset is never negative, got -64" in str(error)


def test_math_on_numbers_alone_asks_for_a_tile():
    def build():
        kb = KernelBuilder("k", grid=[("a_dim0", 64)])
        kb.exp2(2.0)  # error: numbers alone

    error = build_error(build)
    assert error.where.line == line_of("# error: numbers alone")
    assert "tile exp2 of numbers alone: one operand must be a register tile" in str(error)


def _row_copy() -> KernelBuilder:
    kb = KernelBuilder("rows", grid=[("a_dim0", 64), ("a_dim1", 64)])
    x, y = kb.global_tensor(f16), kb.global_tensor(f16)
    offsets = [kb.block_idx.x * 64, kb.block_idx.y * 64]
    kb.store_global(y, kb.cast(kb.load_tile(x, offsets, [64, 64]), f16), offsets)
    return kb


def test_a_malformed_derived_size_is_named_before_any_missing_size(tmp_path):
    compiled = _row_copy().finish().compile()
    with pytest.raises(SizesError, match="derived size a_dim1: factor 'a_dim0 / 3' of"):
        compiled.write_artifact(tmp_path / "a", a_dim0=64, derived_sizes={"a_dim1": "a_dim0 / 3"})


def test_an_artifact_whose_grid_no_launch_can_have_is_refused_when_written(tmp_path):
    compiled = _row_copy().finish().compile()
    with pytest.raises(SizesError, match=r"make a grid of \[1, 65537, 1\] blocks"):
        compiled.write_artifact(tmp_path / "a", a_dim0=64, a_dim1=65537 * 64)


def _fixed_width_rows(width: int) -> KernelBuilder:
    """Rows of `width` columns at column 0 of every block: a kernel for rows
    of at most `width` elements."""
    kb = KernelBuilder("fixed", grid=[("a_dim0", 64)])
    x, y = kb.global_tensor(f16), kb.global_tensor(f16)
    row = kb.block_idx.x * 64
    kb.store_global(y, kb.cast(kb.load_tile(x, [row, 0], [64, width]), f16), [row, 0])
    return kb


def test_an_output_wider_than_every_store_reaches_is_refused(tmp_path):
    compiled = _fixed_width_rows(64).finish().compile()
    compiled.write_artifact(tmp_path / "fits", a_dim0=1000, a_dim1=64)
    compiled.write_artifact(tmp_path / "narrower", a_dim0=1000, a_dim1=50)
    with pytest.raises(SizesError, match=r"reaching columns \[0, 64\); a_dim1 = 300 leaves"):
        compiled.write_artifact(tmp_path / "wider", a_dim0=1000, a_dim1=300)
    # The artifact carries the rule: resizing it (wsc run --size) applies it too.
    artifact = load_artifact(tmp_path / "fits")
    assert artifact.resized(a_dim0=5, a_dim1=64).sizes == {"a_dim0": 5, "a_dim1": 64}
    with pytest.raises(SizesError, match=r"reaching columns \[0, 64\); a_dim1 = 65 leaves"):
        artifact.resized(a_dim0=5, a_dim1=65)
    meta = json.loads((tmp_path / "fits" / "kernel.json").read_text())
    assert meta["store_reach"] == [
        {"tensor": "b", "dim": 0, "axis": 0, "step": 64, "covered": 64},
        {"tensor": "b", "dim": 1, "axis": None, "step": 0, "covered": 64},
    ]
    meta["store_reach"][1]["tensor"] = "z"
    (tmp_path / "fits" / "kernel.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match=r"key 'store_reach\[1\]': names no dim of a tensor"):
        load_artifact(tmp_path / "fits")


def test_stores_reach_the_union_of_their_tiles_without_a_gap():
    from wsc.compiler import store_reach
    from wsc.runtime.artifact import StoreReach

    def stores(cols, step=None) -> tuple:
        kb = KernelBuilder("k", grid=[("a_dim0", 64)] + ([("a_dim1", step)] if step else []))
        x, y = kb.global_tensor(f16), kb.global_tensor(f16)
        row = kb.block_idx.x * 64
        base = kb.block_idx.y * step if step else 0
        tile = kb.cast(kb.load_tile(x, [row, 0], [64, 64]), f16)
        for col in cols:
            kb.store_global(y, tile, [row, base + col] if step else [row, col])
        return store_reach(kb.finish().module.operation)

    rows = StoreReach("b", 0, 0, 64, 64)
    assert stores([0, 64]) == (rows, StoreReach("b", 1, None, 0, 128))
    assert stores([0, 128]) == (rows, StoreReach("b", 1, None, 0, 64))  # a gap at 64
    assert stores([64]) == (rows, StoreReach("b", 1, None, 0, 0))
    assert stores([0, 64], step=128) == (rows, StoreReach("b", 1, 1, 128, 128))
    assert stores([0], step=128)[1] == StoreReach("b", 1, 1, 128, 64)
    # An offset from a run-time value (a size, a loop's index) may reach any
    # column: no reach along that dim.
    kb = KernelBuilder("k", grid=[("a_dim0", 64)])
    x, y = kb.global_tensor(f16), kb.global_tensor(f16)
    row = kb.block_idx.x * 64
    tile = kb.load_tile(x, [row, 0], [64, 64])
    kb.store_global(y, kb.cast(tile, f16), [row, x.shape[1]])
    assert store_reach(kb.finish().module.operation) == (rows,)


def test_a_grid_that_misses_tiles_of_the_output_is_refused(tmp_path):
    """A block index stepping by more than the tiles stored, or a grid axis
    counting larger tiles than the step, leaves rows no block writes."""

    def rows(step: int, grid_tile: int, tile_rows: int = 64):
        kb = KernelBuilder("k", grid=[("a_dim0", grid_tile)])
        x, y = kb.global_tensor(f16), kb.global_tensor(f16)
        row = kb.block_idx.x * step
        tile = kb.load_tile(x, [row, 0], [tile_rows, 64])
        kb.store_global(y, kb.cast(tile, f16), [row, 0])
        return kb.finish().compile()

    rows(64, 64).write_artifact(tmp_path / "fits", a_dim0=1000, a_dim1=64)
    with pytest.raises(SizesError, match=r"write rows \[0, 64\) of each step"):
        rows(128, 128).write_artifact(tmp_path / "gap", a_dim0=1000, a_dim1=64)
    with pytest.raises(SizesError, match=r"the grid's 8 blocks along x reach rows \[0, 512\)"):
        rows(64, 128).write_artifact(tmp_path / "short", a_dim0=1000, a_dim1=64)


def test_a_persistent_kernel_that_never_strides_by_the_grid_is_refused():
    def build():
        kb = KernelBuilder("k", grid=[("a_dim0", 64)], persistent=True)  # error: no stride
        x, y = kb.global_tensor(f16), kb.global_tensor(f16)
        row = kb.block_idx.x * 64
        kb.store_global(y, kb.cast(kb.load_tile(x, [row, 0], [64, 64]), f16), [row, 0])
        kb.finish()

    error = build_error(build)
    assert error.where.line == line_of("# error: no stride")
    assert "never reads kb.grid_dim" in str(error)


def test_tile_shapes_and_row_vector_stores_are_refused_in_the_builders_terms():
    def load_32_rows():
        kb = KernelBuilder("k", grid=[("a_dim0", 64)])
        x = kb.global_tensor(f16)
        kb.load_tile(x, [kb.block_idx.x * 64, 0], [32, 64])  # error: 32 rows

    error = build_error(load_32_rows)
    assert error.where.line == line_of("# error: 32 rows")
    assert "load_tile: shape must be [rows, cols] with rows a multiple of 64" in str(error)

    def store_row_vector():
        kb = KernelBuilder("k", grid=[("a_dim0", 64)])
        x, y = kb.global_tensor(f16), kb.global_tensor(f32)
        row = kb.block_idx.x * 64
        sums = kb.row_sum(kb.load_tile(x, [row, 0], [64, 64]))
        kb.store_global(y, sums, [row, 0])  # error: row vector

    error = build_error(store_row_vector)
    assert error.where.line == line_of("# error: row vector")
    assert "store_global: a row vector [64, 1] serves register math" in str(error)
