"""WGMMA with A read from registers (wsc.wgmma_register_a): an accumulator
cast to f16 or bf16 feeds the next WGMMA without going through shared
memory, the step of a back-to-back product (and of attention); and register
tiles updated in place (wsc.tile_assign), attention's running state."""

import re
import sys
from pathlib import Path

import pytest

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    BuildError,
    BuildTypeError,
    KernelBuilder,
    cdiv,
    f16,
    f32,
)
from wsc.codegen import find_ptxas
from wsc.codegen.fragments import AccumulatorFragment, a_operand_registers
from wsc.runtime import load_artifact
from wsc.target.hopper import WARP_SIZE, WARPGROUP_SIZE, wgmma_k

#: K of one WGMMA with 16-bit A in registers.
WGMMA_K = wgmma_k("f16")


def isa_a_element(thread: int, step: int, element: int) -> tuple[int, int]:
    """(row, col) of element a<element> (0..7) of the A fragment of an
    m64nNk16 WGMMA with A in registers, for K step `step` (PTX ISA, "Register
    Fragments" of wgmma, matrix A): a0 and a1 in row l/4 at columns 2 (l%4)
    and + 1, a2 and a3 eight rows down, a4..a7 the same eight columns on."""
    warp, lane = divmod(thread, WARP_SIZE)
    row = 16 * warp + lane // 4 + 8 * ((element // 2) % 2)
    col = WGMMA_K * step + 2 * (lane % 4) + element % 2 + 8 * (element // 4)
    return row, col


@pytest.mark.parametrize("cols", [16, 64, 256])
def test_a_tile_of_the_accumulator_layout_is_the_a_fragment(cols):
    """Every thread's four A registers of every K step hold, low half then
    high half, the elements the ISA puts in a0..a7."""
    fragment = AccumulatorFragment(64, cols)
    for thread in range(WARPGROUP_SIZE):
        for step in range(cols // WGMMA_K):
            held = [
                fragment.coordinates(thread, 0, register)
                for pair in a_operand_registers(step)
                for register in pair
            ]
            assert held == [isa_a_element(thread, step, e) for e in range(8)]


def back_to_back(second_a_dtype=f16, out_dtype=f32, value_cols: int = 64):
    """O = (Q K^T) V for one 64-row block of Q: the first product's
    accumulator, cast to f16, is the second WGMMA's A operand."""
    kb = KernelBuilder("back_to_back", num_warps=4, grid=[("m", 64)])
    q, k, v = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f16)
    o = kb.global_tensor(f32)
    sq = kb.shared_tensor(f16, [1, 64, 64])
    sk = kb.shared_tensor(f16, [1, 64, 64])
    sv = kb.shared_tensor(f16, [1, 64, value_cols])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    row = kb.block_idx.x * 64
    with kb.single_thread():
        kb.mbarrier.arrive_and_expect_tx(full[0], sq[0].nbytes + sk[0].nbytes + sv[0].nbytes)
        kb.tma.global_to_shared(q, sq[0], [row, 0], mbarrier=full[0])
        kb.tma.global_to_shared(k, sk[0], [0, 0], mbarrier=full[0])
        kb.tma.global_to_shared(v, sv[0], [0, 0], mbarrier=full[0])
    kb.mbarrier.wait(full[0], phase=False)
    s = kb.register_tensor(f32, [64, 64])
    kb.wgmma.fence()
    kb.wgmma.mma(sq[0], sk[0].transpose(), s)
    kb.wgmma.commit_group()
    kb.wgmma.wait_group(0)
    p = kb.cast(s, second_a_dtype) if second_a_dtype != f32 else s
    out = kb.register_tensor(out_dtype, [64, 64])
    kb.wgmma.fence()
    kb.wgmma.mma(p, sv[0], out)  # the second product
    kb.wgmma.commit_group()
    kb.wgmma.wait_group(0)
    kb.store_global(o, out, [row, 0])
    return kb.finish()


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_a_back_to_back_product_assembles_and_names_its_sizes(tmp_path):
    compiled = back_to_back().compile()
    ptx = compiled.result.ptx
    # The second product: four K steps of 16, each A in four 32-bit registers.
    steps = re.findall(r"m64n64k16\.f32\.f16\.f16 \{[^}]*\}, \{(%r\d+, ){3}%r\d+\}", ptx)
    assert len(steps) == 4
    # The cast writes A's registers in pairs before the fence: ptxas need
    # not fence them again (C7519) nor serialize the WGMMAs (C7520).
    assert compiled.result.ptxas.spill_stores == 0 and not compiled.result.ptxas.warnings
    # Q [m, k], K [n, k], V [n, e] and O [m, e]: the second product's K is
    # the first one's N, its rows the first one's.
    directory = compiled.write_artifact(tmp_path, m=128, n=64, k=64, d_dim1=64)
    artifact = load_artifact(directory)
    shapes = {name: spec.dims for name, spec in artifact.tensors.items()}
    assert shapes == {
        "a": ("m", "k"),
        "b": ("n", "k"),
        "c": ("n", "d_dim1"),
        "d": ("m", "d_dim1"),
    }


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
@pytest.mark.parametrize("head", [64, 128, 256])
def test_the_example_back_to_back_split_over_n_hands_partial_outputs_over(tmp_path, head):
    """examples/back_to_back.py with splits and the ring its head width
    defaults to: a grid axis of blocks per row block, each over its share of
    the N tiles, and the split-K workspace in the artifact (partial O tiles,
    and counters that start at zero); the protocol check passes and ptxas
    assembles it without spills (at 256 too, O alone 128 registers of 168)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from back_to_back import back_to_back as example

    compiled = example(splits=4, head=head, value=head).compile()
    assert compiled.result.ptxas.spill_stores == 0
    directory = compiled.write_artifact(tmp_path, m=1000, n=1000, k=head, d_dim1=head)
    artifact = load_artifact(directory)
    assert artifact.grid == (8, 4, 1)  # cdiv(1000, 128) row blocks, 4 splits each
    workspaces = {n: s for n, s in artifact.tensors.items() if s.role == "workspace"}
    assert sorted(s.zeroed for s in workspaces.values()) == [False, True]
    assert artifact.config["splits"] == 4


def test_register_a_mistakes_are_located():
    def error(**options):
        with pytest.raises((BuildError, BuildTypeError)) as caught:
            back_to_back(**options)
        return str(caught.value)

    assert "A (registers) is f32 but B is f16; cast A to B's dtype" in error(second_a_dtype=f32)
    assert "with A in registers the accumulator is f32, got f16" in error(out_dtype=f16)
    assert (
        "shapes do not chain: A is [64, 64] (registers), B is [64, 128] (a [K, N] stage), "
        "acc is [64, 64]" in error(value_cols=128)
    )


def test_assign_mistakes_are_located():
    kb = KernelBuilder("assign", num_warps=4, grid=[("m", 64)])
    running = kb.register_tensor(f32, [64, 64])
    with pytest.raises(BuildError, match="dst must be a kb.register_tensor"):
        kb.assign(running * 2.0, running)
    with pytest.raises(BuildTypeError, match="dst is a 64x64 f32 tile, src a 64x128 f32 one"):
        kb.assign(running, kb.register_tensor(f32, [64, 128]))


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
@pytest.mark.parametrize("groups", [1, 2])
def test_attention_specializes_with_its_running_state_per_group(groups):
    """examples/attention.py through --warp-specialize: each consumer group
    sets and updates its own rows of O, m and l; the protocol check passes
    and ptxas assembles it without spills."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from attention import attention

    kernel = attention(num_consumer_groups=groups, block_m=64 * groups)
    text = str(kernel)
    assigns = text.count('"wsc.tile_assign"')
    assert assigns == 4 * groups  # m before the loop; l, m and O in it
    compiled = kernel.compile()
    assert compiled.result.ptxas.spill_stores == 0


def persistent_two_products(stages=2):
    """A persistent loop over row blocks around a K loop of two products with
    a running row max, set before the K loop of every tile: O = exp2(S - m) V
    with S = Q K^T and m the running max of S (Q through the ring)."""
    kb = KernelBuilder("persistent_two_products", num_warps=4, grid=[("m", 128)])
    q, k, v = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f16)
    out = kb.global_tensor(f32)
    sq, sk, sv = (kb.shared_tensor(f16, [stages, rows, 64]) for rows in (128, 64, 64))
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=stages)
    kb.sync()
    tiles_m, n = cdiv(q.shape[0], 128), k.shape[0]
    for tiles in kb.tile_range(
        kb.block_idx.x, tiles_m, kb.grid_dim.x, stages=stages, phase=CONSUMER_INITIAL_PHASE
    ):
        row = tiles.tile * 128
        o, m = kb.register_tensor(f32, [128, 64]), kb.register_tensor(f32, [128, 64])
        kb.assign(m, m - 1e30)  # per tile, before its K loop
        for it in kb.range(0, n, 64, stages=stages, ring=tiles):
            st = it.stage
            with kb.single_thread():
                nbytes = sq[st].nbytes + sk[st].nbytes + sv[st].nbytes
                kb.mbarrier.arrive_and_expect_tx(full[st], nbytes)
                kb.tma.global_to_shared(q, sq[st], [row, 0], mbarrier=full[st])
                kb.tma.global_to_shared(k, sk[st], [it.offset, 0], mbarrier=full[st])
                kb.tma.global_to_shared(v, sv[st], [it.offset, 0], mbarrier=full[st])
            kb.mbarrier.wait(full[st], phase=it.phase)
            s = kb.register_tensor(f32, [128, 64])
            kb.wgmma.fence()
            kb.wgmma.mma(sq[st], sk[st].transpose(), s)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            kb.assign(m, kb.max(m, kb.row_max(s)))
            p = kb.cast(kb.exp2(s - m), f16)
            kb.wgmma.fence()
            kb.wgmma.mma(p, sv[st], o)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            kb.sync()
        kb.store_global(out, o, [row, 0])
    return kb.finish()


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_a_persistent_loop_of_two_products_specializes():
    """The register math before a tile's K loop goes to each consumer group
    (in its rows), not to the producer; the protocol check (a block of one,
    and block 1 of 3 over four tiles) passes and ptxas assembles it."""
    kernel = persistent_two_products().warp_specialize(
        num_stages=2, num_consumer_groups=2, producer="warpgroup"
    )
    roles = str(kernel).split('"wsc.role"')
    consumers, producer = roles[1:3], roles[3]
    for consumer in consumers:
        assert consumer.count('"wsc.tile_assign"') == 2  # m set per tile, then updated
        assert "!wsc.acc<array<i64: 64, 64>, f32>" in consumer
    assert '"wsc.tile_assign"' not in producer
    assert kernel.compile().result.ptxas.spill_stores == 0
