"""The Python builders create every wsc op in the form the IRDL definition and
the verifier accept, and what they build prints and parses back unchanged."""

import pytest
from mlir import ir
from mlir.dialects import func, scf

from wsc import dialect, ops
from wsc.diagnostics import PassError
from wsc.ir_utils import CLUSTER_SIZE_ATTR, KERNEL_THREADS_ATTR, bool_constant, index_constant, walk
from wsc.kernels.matmul.build import build_matmul
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.verifier import verify_wsc


def build_every_op() -> ir.Module:
    module = ir.Module.create()
    memref_f16 = ir.Type.parse("memref<?x?xf16>")
    with ir.InsertionPoint(module.body):
        partials_type = ir.Type.parse("memref<?xf32>")
        counters_type = ir.Type.parse("memref<?xi32>")
        kernel = func.FuncOp(
            "every_op",
            ir.FunctionType.get(
                [memref_f16] * 3
                + [partials_type, counters_type, ir.Type.parse("memref<?x?x?xf16>")]
                + [ir.F32Type.get()],
                [],
            ),
        )
        kernel.attributes[KERNEL_THREADS_ATTR] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 160
        )
        # In clusters of two, for the cluster ops.
        kernel.attributes[CLUSTER_SIZE_ATTR] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 2
        )
        entry = kernel.add_entry_block()
    with ir.InsertionPoint(entry):
        a, b, c, partials, counters, batch, alpha = entry.arguments
        zero = index_constant(0)
        sa = dialect.alloc_shared(dialect.shared_buffer_type(2, 128, 64, "f16"))
        sb = dialect.alloc_shared(dialect.shared_buffer_type(2, 128, 64, "f16"))
        sc = dialect.alloc_shared(dialect.shared_buffer_type(1, 128, 128, "f16"))
        full = dialect.mbarrier_alloc(1, 2)
        empty = dialect.mbarrier_alloc(128, 2)
        dialect.sync()
        dialect.cluster_sync()
        consumer = scf.IfOp(dialect.role("consumer", 0, 128, max_registers=232))
        with ir.InsertionPoint(consumer.then_block):
            acc = dialect.acc_alloc(dialect.acc_type((128, 128), "f32"))
            dialect.mbarrier_wait(full, zero, bool_constant(dialect.CONSUMER_INITIAL_PHASE))
            dialect.wgmma_fence()
            dialect.wgmma(sa, sb, zero, acc, a_row=0, b_layout="nk")
            dialect.wgmma_commit_group()
            dialect.wgmma_wait_group(0)
            second = dialect.acc_alloc(dialect.acc_type((128, 64), "f32"))
            dialect.wgmma_fence()
            dialect.wgmma_register_a(dialect.cast(acc, "f16"), sb, zero, second, b_layout="kn")
            dialect.wgmma_commit_group()
            dialect.wgmma_wait_group(0)
            dialect.tile_assign(second, second)
            dialect.mbarrier_arrive(empty, zero)
            dialect.mbarrier_arrive(empty, zero, every_cta=True)
            dialect.partial_store(acc, partials, zero, zero, splits=2)
            last = scf.IfOp(dialect.partial_arrive(counters, zero, splits=2))
            with ir.InsertionPoint(last.then_block):
                dialect.partial_reduce(acc, partials, counters, zero, splits=2)
                scf.YieldOp([])
            halves = dialect.tile_fill((128, 128), 0.5)
            scaled = dialect.tile_binary("mul", acc, halves)
            row_sums = dialect.tile_row_reduce("sum", dialect.tile_unary("relu", scaled))
            dialect.tile_col_reduce("max", row_sums, 16)
            dialect.load_shared(sc, zero, (128, 64), origin=(0, 64))
            dialect.tile_load(c, zero, zero, (128, 128))
            dialect.tile_broadcast(partials, zero, (128, 128), "cols")
            dialect.tile_splat((128, 128), alpha)
            rows = dialect.tile_iota((128, 128), "rows", zero)
            dialect.tile_select(
                "gt", dialect.tile_iota((128, 128), "cols", zero), rows, acc, halves
            )
            half = dialect.cast(acc, "f16")
            dialect.store(half, c, zero, zero)
            dialect.store_shared(half, sc, zero)
            dialect.fence_proxy_async()
            storer = scf.IfOp(dialect.elect())
            with ir.InsertionPoint(storer.then_block):
                dialect.tma_store(sa, zero, c, zero, zero)
                dialect.tma_store_wait(0)
                scf.YieldOp([])
            dialect.coalesced_store(sc, zero, c, zero, zero)
            scf.YieldOp([])
        producer = scf.IfOp(dialect.role("producer", 128, 32))
        with ir.InsertionPoint(producer.then_block):
            stage, phase = dialect.ring_advance(zero, bool_constant(True), 2)
            dialect.mbarrier_wait(empty, stage, phase)
            elected = scf.IfOp(dialect.elect())
            with ir.InsertionPoint(elected.then_block):
                dialect.mbarrier_arrive_expect_tx(full, stage, 32768)
                dialect.tma_load(a, zero, zero, sa, stage, full)
                dialect.tma_load(b, zero, zero, sb, stage, full)
                dialect.tma_load(b, dialect.cluster_rank(), zero, sb, stage, full, multicast=True)
                dialect.tma_load(dialect.batch_matrix(batch, zero), zero, zero, sa, stage, full)
                scf.YieldOp([])
            scf.YieldOp([])
        func.ReturnOp([])
    return module


@pytest.fixture
def context():
    with dialect.make_context() as ctx, ir.Location.unknown():
        yield ctx


def test_every_builder_verifies_and_round_trips(context):
    module = build_every_op()
    assert module.operation.verify()
    verify_wsc(module.operation)
    built = {op.name for op in walk(module.operation) if op.name.startswith("wsc.")}
    assert built == dialect.OP_NAMES, f"ops without a builder test: {dialect.OP_NAMES - built}"
    text = str(module)
    assert str(ir.Module.parse(text)) == text


def test_views_read_and_write_ops_by_name(context):
    module = build_every_op()
    found: dict[str, ir.Operation] = {}
    for op in walk(module.operation):
        found.setdefault(op.name, op)
    role = ops.Role(found["wsc.role"])
    assert (role.role, role.thread_begin, role.num_threads) == ("consumer", 0, 128)
    assert role.max_registers == 232
    loads = [ops.TmaLoad(op) for op in walk(module.operation) if op.name == "wsc.tma_load"]
    assert [load.multicast for load in loads] == [False, False, True, False]
    batch = ops.BatchMatrix(found["wsc.batch_matrix"])
    assert loads[3].src == batch.matrix and batch.batch == module.body.operations[0].arguments[5]
    assert all(dialect.is_mbarriers(load.barriers.type) for load in loads)
    assert loads[2].row == ops.ClusterRank(found["wsc.cluster_rank"]).rank
    wgmma = ops.Wgmma(found["wsc.wgmma"])
    wgmma.a_row = 64
    assert ir.IntegerAttr(found["wsc.wgmma"].attributes["a_row"]).value == 64
    assert wgmma.b_layout == "nk"
    with pytest.raises(ValueError, match="TmaLoad views wsc.tma_load, not wsc.wgmma"):
        ops.TmaLoad(found["wsc.wgmma"])


def test_the_definitions_come_from_irdl():
    assert ops.DEFINITIONS["wsc.tma_load"].operands == (
        "src",
        "row",
        "col",
        "dst",
        "stage",
        "barriers",
    )
    assert ops.DEFINITIONS["wsc.mbarrier_arrive"].optional_attributes == {
        "every_cta": ops.UNIT_BASE,
        "per_warp": ops.UNIT_BASE,
    }
    assert ops.DEFINITIONS["wsc.role"].optional_attributes == {"max_registers": ops.INTEGER_BASE}


def test_a_view_must_name_every_field_of_its_op():
    with pytest.raises(TypeError, match="wsc.mbarrier_wait defines"):

        class Misnamed(ops.WscOp, name="wsc.mbarrier_wait"):
            bars = ops.Operand()
            stage = ops.Operand()
            phase = ops.Operand()


def test_acc_type_parameters(context):
    tile = dialect.acc_type((64, 256), "bf16")
    assert dialect.parse_acc_type(tile) == ((64, 256), "bf16")
    assert dialect.parse_acc_type(ir.IndexType.get()) is None
    assert dialect.acc_type_parameters(tile) == ((64, 256), "bf16")
    with pytest.raises(ValueError):
        dialect.acc_type_parameters(ir.IndexType.get())  # not an accumulator


def test_initial_phases_are_the_protocol_constants():
    # A fresh mbarrier is in phase 0: a producer waiting for parity 1 passes at
    # once (every stage starts empty), a consumer waiting for parity 0 blocks.
    assert dialect.PRODUCER_INITIAL_PHASE is True
    assert dialect.CONSUMER_INITIAL_PHASE is False


def test_verifier_rejects_a_misaligned_role(context):
    module = ir.Module.parse(
        "func.func @k() attributes {wsc.num_threads = 160 : i32} {\n"
        '  %r = "wsc.role"() {role = "producer", thread_begin = 16 : i32, num_threads = 32 : i32} : () -> i1\n'
        "  return\n}"
    )
    with pytest.raises(PassError, match=r"thread range \[16, 48\) must be whole warps"):
        verify_wsc(module.operation)


@pytest.mark.parametrize(
    "dtype,out_dtype,b_layout", [("f16", "f32", "nk"), ("bf16", "bf16", "nk"), ("f16", "f16", "kn")]
)
def test_matmul_builder_emits_a_valid_v2_kernel(context, dtype, out_dtype, b_layout):
    module = build_matmul(MatmulProblem(dtype, out_dtype, b_layout), MatmulConfig())
    assert module.operation.verify()
    verify_wsc(module.operation)
    names = [op.name for op in walk(module.operation)]
    assert names.count("wsc.tma_load") == 2
    assert ("wsc.cast" in names) == (out_dtype != "f32")


def test_matmul_problem_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="dtype must be one of f16, bf16, f8E4M3FN, got 'f32'"):
        MatmulProblem(dtype="f32")
