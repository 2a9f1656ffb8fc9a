"""Tests of wsc.codegen and --convert-wsc-to-nvvm.

Pure-Python parts (descriptor bits, shared-memory layout, fragment maps) need
nothing; the lowering tests need the MLIR bindings; the ptxas tests are
skipped when ptxas is not installed. Nothing here needs a GPU.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wsc.codegen import KernelInfo, PtxasError, assemble, find_ptxas, tensor_name
from wsc.codegen.descriptors import OperandDescriptors, decode, encode
from wsc.codegen.fragments import AccumulatorFragment, operand_register, row_register
from wsc.codegen.layout import ALIGN_PADDING, LayoutError, SharedLayout, TileLayout
from wsc.target.hopper import MAX_DYNAMIC_SMEM

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")

V3_PARAMS = [
    {"kind": "tensor_map", "name": "a"},
    {"kind": "tensor_map", "name": "b"},
    {"kind": "pointer", "name": "c"},
    {"kind": "i32", "name": "m"},
    {"kind": "i32", "name": "n"},
    {"kind": "i32", "name": "k"},
    {"kind": "i32", "name": "ldc"},
]


def v3_kernel(
    bm=128,
    bn=128,
    bk=64,
    stages=4,
    dtype="f16",
    out="f32",
    b_layout="nk",
    consumers=1,
    consumer_regs=232,
    producer_regs=40,
    producer_threads=32,
):
    """A V3/V4-shaped specialized kernel as wsc text: `consumers` consumer
    warpgroups (each owning bm/consumers rows of the tile) and one producer role."""
    rows = bm // consumers
    threads = 128 * consumers + producer_threads
    b_tile = f"{bn}x{bk}" if b_layout == "nk" else f"{bk}x{bn}"
    sa = f"memref<{stages}x{bm}x{bk}x{dtype}, 3>"
    sb = f"memref<{stages}x{b_tile}x{dtype}, 3>"
    g = f"memref<?x?x{dtype}>"
    acc = f"!wsc.acc<array<i64: {rows}, {bn}>, f32>"
    out_acc = f"!wsc.acc<array<i64: {rows}, {bn}>, {out}>"
    b_coords = "%n0, %k0" if b_layout == "nk" else "%k0, %n0"
    bars = "!wsc.mbarriers"
    text = [
        f"""func.func @matmul(%a: {g}, %b: {g}, %c: memref<?x?x{out}>)
    attributes {{wsc.num_threads = {threads} : i32}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nst = arith.constant {stages} : index
  %bk = arith.constant {bk} : index
  %bm = arith.constant {bm} : index
  %bn = arith.constant {bn} : index
  %false = arith.constant false
  %true = arith.constant true
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %bm : index
  %n0 = arith.muli %by, %bn : index
  %k = memref.dim %a, %c1 : {g}
  %k_tiles = arith.ceildivui %k, %bk : index
  %sa = "wsc.alloc_shared"() : () -> {sa}
  %sb = "wsc.alloc_shared"() : () -> {sb}
  %full = "wsc.mbarrier_alloc"() {{arrival_count = 1 : i32, num_barriers = {stages} : i32}} : () -> {bars}
  %empty = "wsc.mbarrier_alloc"() {{arrival_count = {128 * consumers} : i32, num_barriers = {stages} : i32}} : () -> {bars}
  "wsc.sync"() : () -> ()"""
    ]
    for i in range(consumers):
        tile = f"%h{i}" if out != "f32" else f"%acc{i}"
        cast = f'    %h{i} = "wsc.cast"(%acc{i}) : ({acc}) -> {out_acc}\n' if out != "f32" else ""
        text.append(f"""  %is_c{i} = "wsc.role"() {{role = "consumer{i}", thread_begin = {128 * i} : i32, num_threads = 128 : i32, max_registers = {consumer_regs} : i32}} : () -> i1
  scf.if %is_c{i} {{
    %acc{i} = "wsc.acc_alloc"() : () -> {acc}
    %cs{i}:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {{
      "wsc.mbarrier_wait"(%full, %stage, %phase) : ({bars}, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc{i}) {{a_row = {rows * i} : i32, b_layout = "{b_layout}"}} : ({sa}, {sb}, index, {acc}) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {{pending = 0 : i32}} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : ({bars}, index) -> ()
      %ns, %np = "wsc.ring_advance"(%stage, %phase) {{num_stages = {stages} : i32}} : (index, i1) -> (index, i1)
      scf.yield %ns, %np : index, i1
    }}
    %roff{i} = arith.constant {rows * i} : index
    %row{i} = arith.addi %m0, %roff{i} : index
{cast}    "wsc.store"({tile}, %c, %row{i}, %n0) : ({out_acc}, memref<?x?x{out}>, index, index) -> ()
  }}""")
    text.append(f"""  %is_p = "wsc.role"() {{role = "producer", thread_begin = {128 * consumers} : i32, num_threads = {producer_threads} : i32, max_registers = {producer_regs} : i32}} : () -> i1
  scf.if %is_p {{
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {{
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : ({bars}, index, i1) -> ()
      %k0 = arith.muli %kt, %bk : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {{
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {{tx_bytes = {(bm + bn) * bk * 2} : i32}} : ({bars}, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : ({g}, index, index, {sa}, index, {bars}) -> ()
        "wsc.tma_load"(%b, {b_coords}, %sb, %stage, %full) : ({g}, index, index, {sb}, index, {bars}) -> ()
      }}
      %ns, %np = "wsc.ring_advance"(%stage, %phase) {{num_stages = {stages} : i32}} : (index, i1) -> (index, i1)
      scf.yield %ns, %np : index, i1
    }}
    %drain = arith.minui %k_tiles, %nst : index
    %ds:2 = scf.for %i = %c0 to %drain step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {{
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : ({bars}, index, i1) -> ()
      %ns, %np = "wsc.ring_advance"(%stage, %phase) {{num_stages = {stages} : i32}} : (index, i1) -> (index, i1)
      scf.yield %ns, %np : index, i1
    }}
  }}
  return
}}
""")
    return "\n".join(text)


# ------------------------------------------------------------------ descriptors


def test_descriptor_fields_round_trip():
    value = encode(0x1_2340, 16, 1024, 128, base_offset=0)
    assert decode(value) == {
        "start_address": 0x1_2340,
        "leading_byte_offset": 16,
        "stride_byte_offset": 1024,
        "base_offset": 0,
        "swizzle": 128,
    }
    # The start address keeps bits 4..17 only.
    assert decode(encode(0x4_0010, 16, 1024, 64))["start_address"] == 0x10
    assert decode(encode(0, 16, 512, 32))["swizzle"] == 32
    with pytest.raises(ValueError):
        encode(0, 8, 1024, 128)  # offsets are in 16-byte units


def test_k_major_128b_descriptor_bits():
    # A [128, 64] f16 stage tile, K-major, 128-B swizzle (the seed's A and B).
    operand = OperandDescriptors(TileLayout.choose(128, 64, 2), k_major=True)
    assert operand.static_bits == 0x4000_0040_0001_0000  # mode 1, SBO 1024, LBO 16
    assert operand.k_steps == 4
    # Each k16 step advances the start address by 32 B (+2 in the field).
    assert [operand.offset(k) for k in range(4)] == [0, 32, 64, 96]
    # The second m64 sub-tile starts 64 rows (8 KB) further.
    assert operand.offset(0, row0=64) == 8192
    full = operand.descriptor(0x400, 3, row0=64)
    assert decode(full)["start_address"] == 0x400 + 8192 + 96
    assert full - operand.descriptor(0x400, 0) == (8192 + 96) >> 4


def test_narrow_swizzles():
    tile64 = TileLayout.choose(128, 32, 2)  # 64-byte rows
    op64 = OperandDescriptors(tile64, k_major=True)
    assert tile64.swizzle == 64 and decode(op64.static_bits)["swizzle"] == 64
    assert op64.stride_byte_offset == 512 and [op64.offset(k) for k in (0, 1)] == [0, 32]
    tile32 = TileLayout.choose(128, 16, 2)  # 32-byte rows: one k16 step per tile
    op32 = OperandDescriptors(tile32, k_major=True)
    assert op32.static_bits >> 62 == 3 and op32.stride_byte_offset == 256
    assert op32.k_steps == 1


def test_wide_k_major_tile_uses_atoms():
    tile = TileLayout.choose(128, 128, 2)  # 256-byte rows: two 128-B atoms
    assert (tile.swizzle, tile.num_atoms, tile.atom_cols, tile.box) == (128, 2, 64, (128, 64))
    operand = OperandDescriptors(tile, k_major=True)
    assert operand.k_steps == 8
    assert operand.offset(3) == 96 and operand.offset(4) == tile.atom_bytes == 16384


def test_n_major_descriptor():
    # B given as [K, N] = [64, 64] f16: k16 steps move 16 rows of 128 B.
    operand = OperandDescriptors(TileLayout.choose(64, 64, 2), k_major=False)
    fields = decode(operand.static_bits)
    assert fields["swizzle"] == 128 and fields["stride_byte_offset"] == 1024
    assert fields["leading_byte_offset"] == 64 * 128  # the next N atom
    assert [operand.offset(k) for k in range(4)] == [0, 2048, 4096, 6144]
    with pytest.raises(ValueError, match="starts on an atom"):
        operand.offset(0, row0=8)


def test_an_m_major_a_operand_starts_at_its_columns_atom():
    # A stage [K, M] = [64, 128] f16, read M-major: the second m64 operand
    # (a second consumer group's) is the second 128-B atom, 64 x 128 B on.
    operand = OperandDescriptors(TileLayout.choose(64, 128, 2), k_major=False)
    assert operand.offset(0, row0=64) == operand.tile.atom_bytes == 8192
    assert operand.offset(3, row0=64) == 8192 + 3 * 2048


# ----------------------------------------------------------------------- layout


def test_tile_layout_rejects_narrow_rows():
    with pytest.raises(LayoutError, match="16 B"):
        TileLayout.choose(64, 8, 2)


def test_a_one_row_tile_is_one_unswizzled_box():
    """A row of 128 f32 (block scales) is stored as it is, one TMA box wide;
    a row TMA cannot copy in one box keeps the swizzled atoms; no WGMMA reads
    it."""
    row = TileLayout.choose(1, 128, 4)
    assert (row.swizzle, row.swizzle_name, row.num_atoms, row.box) == (0, "none", 1, (1, 128))
    assert [row.swizzled_offset(0, col) for col in range(128)] == [4 * col for col in range(128)]
    assert row.atom_bytes == row.tile_bytes == 512
    wide = TileLayout.choose(1, 512, 2)  # 512 columns: more than a box's 256
    assert (wide.swizzle, wide.num_atoms) == (128, 8)
    with pytest.raises(ValueError, match="no WGMMA operand"):
        OperandDescriptors(row, k_major=True)


def test_v3_shared_layout():
    layout = SharedLayout()
    a = layout.add_buffer("a", 4, TileLayout.choose(128, 64, 2))
    b = layout.add_buffer("b", 4, TileLayout.choose(128, 64, 2))
    full = layout.add_barriers("full", 4, 1)
    empty = layout.add_barriers("empty", 4, 128)
    assert (a.offset, a.stage_bytes, b.offset) == (0, 16384, 65536)
    assert (full.offset, empty.offset, layout.end) == (131072, 131104, 131136)
    assert layout.dynamic_smem_bytes == 131136 + ALIGN_PADDING == 132160
    assert layout.overlaps() == []
    assert empty.address(3) == 131128


def test_stages_are_1024_aligned():
    layout = SharedLayout()
    odd = layout.add_buffer("odd", 3, TileLayout.choose(24, 32, 2))  # 1536-byte tiles
    after = layout.add_buffer("after", 2, TileLayout.choose(64, 64, 2))
    assert odd.stage_bytes == 2048 and after.offset == 6144
    assert all(s.offset % 1024 == 0 and s.stage_bytes % 1024 == 0 for s in layout.buffers)
    with pytest.raises(LayoutError):
        layout.add_barriers("x", 1, 1)
        layout.add_buffer("late", 1, TileLayout.choose(64, 64, 2))


# -------------------------------------------------------------------- fragments


@pytest.mark.parametrize("rows,cols", [(64, 8), (64, 64), (128, 128), (64, 256)])
def test_fragment_is_a_bijection(rows, cols):
    fragment = AccumulatorFragment(rows, cols)
    seen = {}
    for thread in range(128):
        for element in fragment.elements():
            coordinate = fragment.coordinates(thread, element.subtile, element.index)
            assert coordinate not in seen
            seen[coordinate] = (thread, element.subtile, element.index)
            assert fragment.owner(*coordinate) == seen[coordinate]
    assert len(seen) == rows * cols
    assert fragment.regs_per_thread * 128 == rows * cols


def test_fragment_layout_matches_the_ptx_figure():
    fragment = AccumulatorFragment(64, 16)
    # Lane l of warp w: rows 16w + l/4 and +8, columns 8j + 2(l%4) + {0, 1}.
    assert fragment.coordinates(0, 0, 0) == (0, 0)
    assert fragment.coordinates(0, 0, 1) == (0, 1)
    assert fragment.coordinates(0, 0, 2) == (8, 0)
    assert fragment.coordinates(5, 0, 0) == (1, 2)
    assert fragment.coordinates(5, 0, 4) == (1, 10)
    assert fragment.coordinates(32 + 3, 0, 3) == (16 + 8, 7)
    assert fragment.coordinates(127, 0, 7) == (63, 15)
    assert AccumulatorFragment(128, 16).coordinates(0, 1, 0) == (64, 0)
    with pytest.raises(ValueError):
        AccumulatorFragment(96, 16)


@pytest.mark.parametrize("rows", [64, 128])
def test_a_row_vector_holds_each_row_of_its_threads_tile_registers(rows):
    """A row vector [rows, 1]: each row in the two registers per 64 rows of
    the four lanes of its quad (the lanes that hold the row of a tile), and
    a tile register's row value in the vector's register row_register(r)."""
    vector, tile = AccumulatorFragment(rows, 1), AccumulatorFragment(rows, 64)
    assert vector.regs_per_thread == 2 * rows // 64
    holders: dict[int, set[int]] = {}
    for thread in range(128):
        for element in vector.elements():
            row, col = vector.coordinates(thread, element.subtile, element.index)
            assert col == 0
            holders.setdefault(row, set()).add(thread)
            assert vector.owner(row, 0) == (thread - thread % 4, element.subtile, element.index)
        for element in tile.elements():
            row, _ = tile.coordinates(thread, element.subtile, element.index)
            assert vector.coordinates(thread, element.subtile, row_register(element.index)) == (
                row,
                0,
            )
    assert sorted(holders) == list(range(rows))
    assert all(len(threads) == 4 for threads in holders.values())


@pytest.mark.parametrize("operand_cols,result_cols", [(64, 64), (1, 64), (1, 8), (1, 1)], ids=str)
def test_element_wise_math_reads_each_operand_at_its_results_element(operand_cols, result_cols):
    """Register r of an element-wise result reads the operand's register of
    the same row and, unless the operand is a row vector broadcast over a
    tile, the same column; a vector result from vectors reads register for
    register (each of its two rows)."""
    operand = AccumulatorFragment(128, operand_cols)
    result = AccumulatorFragment(128, result_cols)
    for thread in range(128):
        for element in result.elements():
            row, col = result.coordinates(thread, element.subtile, element.index)
            read = operand_register(operand, result, element.index)
            assert operand.coordinates(thread, element.subtile, read) == (
                row,
                0 if operand.row_vector else col,
            )


# ------------------------------------------------------------------------- info


def test_tensor_names_and_info_json():
    assert [tensor_name(i) for i in (0, 1, 2, 25, 26)] == ["a", "b", "c", "z", "t26"]
    info = KernelInfo("k", (160, 1, 1), 132160, V3_PARAMS, {"a": {"box": [128, 64]}})
    assert KernelInfo.loads(info.dumps()) == info
    assert info.to_json()["block"] == [160, 1, 1]


# --------------------------------------------------------------------- lowering

mlir = pytest.importorskip("mlir.ir")


def _lower(text, **options):
    from wsc.codegen import lower_to_ptx

    return lower_to_ptx(text, **options)


def test_entry_register_cap_matches_ptxas():
    from wsc.codegen.plan import entry_register_cap

    # Values ptxas 13.0 reported for kernels with setmaxnreg.
    assert [entry_register_cap(t) for t in (160, 288, 384, 416)] == [255, 168, 168, 128]


def test_v3_kernel_info():
    ptx, info = _lower((EXAMPLES / "matmul_v3.mlir").read_text())
    assert info.name == "matmul" and info.block == (160, 1, 1)
    assert info.params == V3_PARAMS
    assert info.tensor_maps == {
        "a": {"tensor": "a", "box": [128, 64], "swizzle": "128B"},
        "b": {"tensor": "b", "box": [128, 64], "swizzle": "128B"},
    }
    assert info.dynamic_smem_bytes == 132160
    assert info.dims == {
        "m": [["a", 0], ["c", 0]],
        "n": [["b", 0], ["c", 1]],
        "k": [["a", 1], ["b", 1]],
    }
    assert info.entry_registers == 255
    assert ".target sm_90a" in ptx and ".version 9.0" in ptx


def test_v3_ptx_structure():
    ptx, info = _lower((EXAMPLES / "matmul_v3.mlir").read_text())
    # One extern dynamic region, 1024-aligned; tensor maps by value.
    assert re.search(r"\.extern \.shared \.align 1024 \.b8 wsc_smem\[\];", ptx)
    assert ".shared .align" not in ptx.replace(".extern .shared .align", "")
    assert ".param .align 64 .b8 matmul_param_0[128]" in ptx
    assert ".param .align 64 .b8 matmul_param_1[128]" in ptx
    assert ".maxntid 160, 1, 1" in ptx and ".minnctapersm 1" in ptx
    # The barriers sit past the stage buffers (offsets from the aligned base).
    offsets = [int(x) for x in re.findall(r"mbarrier\.init\.shared\.b64\s+\[%\w+\+(\d+)\]", ptx)]
    buffers_end = info.shared_layout["barriers"][0]["offset"]
    assert sorted(offsets) == list(range(buffers_end, buffers_end + 64, 8))
    assert buffers_end == 131072 and info.shared_layout["end"] == 131136
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 8
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 2
    assert "setmaxnreg.dec.sync.aligned.u32 \t232" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 \t40" in ptx
    assert "fence.mbarrier_init.release.cluster" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "bar.sync \t0;" in ptx
    # K-major A and B: imm-trans-a = imm-trans-b = 0.
    assert re.search(
        r"m64n128k16\.f32\.f16\.f16 \{[^}]*\}, %rd\d+, %rd\d+, p, 1,\s+1, 0,\s+0;", ptx
    )


def test_role_sync_is_a_named_barrier():
    text = (
        (EXAMPLES / "matmul_v3.mlir")
        .read_text()
        .replace('    "wsc.store"(%acc', '    "wsc.sync"() : () -> ()\n    "wsc.store"(%acc', 1)
    )
    ptx, _ = _lower(text)
    assert "bar.sync \t1, 128;" in ptx


def test_index_bitwidth_64():
    ptx, info = _lower((EXAMPLES / "matmul_v3.mlir").read_text(), index_bitwidth=64)
    assert info.params == V3_PARAMS and ptx.count("wgmma.mma_async.sync") == 8


def test_pass_output_is_llvm_and_nvvm_only():
    from mlir import ir

    from wsc.dialect import make_context
    from wsc.ir_utils import walk
    from wsc.passes.convert_wsc_to_nvvm import ConvertWscToNvvm

    with make_context():
        module = ir.Module.parse((EXAMPLES / "matmul_v3.mlir").read_text())
        ConvertWscToNvvm().run(module.operation)
        module.operation.verify()
        ops = list(walk(module.operation))
        gpu_modules = [op for op in ops if op.name == "gpu.module"]
        assert len(gpu_modules) == 1
        assert 'chip = "sm_90a"' in str(gpu_modules[0].attributes["targets"])
        kernel = next(op for op in ops if op.name == "llvm.func")
        assert "nvvm.kernel" in kernel.attributes
        assert str(kernel.attributes["nvvm.maxntid"]) == "array<i32: 160, 1, 1>"
        body = [op.name for op in walk(kernel)]
        assert all(name.split(".")[0] in ("llvm", "nvvm") for name in body)
        assert "nvvm.wgmma.mma_async" in body and "nvvm.setmaxregister" in body
        info = KernelInfo.loads(ir.StringAttr(kernel.attributes["wsc.kernel_info"]).value)
        assert info.params == V3_PARAMS
        # lower_to_ptx also takes the pass's output.
        from wsc.codegen import lower_to_ptx

        ptx, info2 = lower_to_ptx(module)
        assert info2 == info and "wgmma.mma_async" in ptx


def test_lower_to_ptx_leaves_its_input_alone():
    from mlir import ir

    from wsc.codegen import lower_to_ptx
    from wsc.dialect import make_context

    with make_context():
        module = ir.Module.parse((EXAMPLES / "matmul_v3.mlir").read_text())
        before = str(module)
        lower_to_ptx(module)
        assert str(module) == before


def test_two_consumer_groups_budget_is_checked():
    from wsc.diagnostics import PassError

    with pytest.raises(PassError, match="setmaxnreg.inc would wait forever|inc would wait"):
        _lower(v3_kernel(consumers=2, bm=256))
    ptx, info = _lower(v3_kernel(consumers=2, bm=256, producer_threads=128))
    assert info.entry_registers == 168 and info.block == (384, 1, 1)
    assert ptx.count("setmaxnreg.inc.sync.aligned.u32 \t232") == 2


def test_too_much_shared_memory_is_located():
    from wsc.diagnostics import PassError

    with pytest.raises(PassError) as caught:
        _lower(v3_kernel(stages=8))
    message = caught.value.message
    assert str(MAX_DYNAMIC_SMEM) in message and "263296" in message


@pytest.mark.parametrize(
    "rows, cols, element_bytes", [(64, 256, 2), (128, 64, 2), (64, 32, 2), (64, 16, 2), (64, 32, 4)]
)
def test_swizzled_offsets_permute_chunks_within_rows(rows, cols, element_bytes):
    """TMA's swizzle, as wsc.store_shared applies it: 16-byte chunk c of the
    128-byte line l of an atom moves to chunk c ^ (l mod swizzle/16), so
    every element stays in its row and gets a distinct place."""
    tile = TileLayout.choose(rows, cols, element_bytes)
    chunks = tile.swizzle // 16
    places = set()
    for row in range(rows):
        for col in range(cols):
            plain = tile.byte_offset(row, col)
            chunk = plain % tile.swizzle // 16
            line = plain // 128
            expected = plain - chunk * 16 + (chunk ^ (line % chunks)) * 16
            assert tile.swizzled_offset(row, col) == expected
            places.add(expected)
    assert len(places) == rows * cols


def test_store_shared_is_free_of_bank_conflicts():
    """One warp's store of a column pair per lane (the lowering's unit) hits
    32 different banks in the 128-byte swizzle: 8 rows of one chunk column
    land in 8 different chunks."""
    tile = TileLayout.choose(64, 256, 2)
    fragment = AccumulatorFragment(64, 256)
    for register in range(0, fragment.regs_per_subtile, 2):  # c = 0 of each pair
        for warp in range(4):
            banks = {
                tile.swizzled_offset(*fragment.coordinates(32 * warp + lane, 0, register)) // 4 % 32
                for lane in range(32)
            }
            assert len(banks) == 32


def test_no_kernel_is_an_error():
    from wsc.diagnostics import PassError

    with pytest.raises(PassError, match="found no kernel"):
        _lower("func.func @f() { return }")


# ------------------------------------------------------------------------ ptxas


@needs_ptxas
def test_matmul_v3_assembles_without_spills():
    ptx, info = _lower((EXAMPLES / "matmul_v3.mlir").read_text())
    report = assemble(ptx)
    assert report.spill_stores == 0 and report.spill_loads == 0
    assert report.stack_frame == 0
    assert report.registers == info.entry_registers == 255
    assert report.warnings == []
    assert report.cubin and report.cubin[:4] == b"\x7fELF"


@needs_ptxas
@pytest.mark.parametrize(
    "options",
    [
        dict(out="f16"),
        dict(dtype="bf16", out="bf16"),
        dict(b_layout="kn", bn=64),
        dict(b_layout="kn", bn=128),
        dict(b_layout="kn", bn=256, consumers=2, producer_threads=128),
        dict(bk=32),
        dict(bk=16, stages=2),
        dict(bm=64, bn=64),
        dict(consumers=2, bm=256, producer_threads=128),
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_variants_assemble(options):
    ptx, info = _lower(v3_kernel(**options))
    report = assemble(ptx)
    assert (report.spill_stores, report.spill_loads, report.stack_frame) == (0, 0, 0)
    assert report.registers == info.entry_registers


@needs_ptxas
def test_unrolled_ring_assembles():
    """Constant stage operands (what --unroll-ring-buffer leaves) lower too."""
    try:
        from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
    except ImportError:
        pytest.skip("--unroll-ring-buffer is not available")
    from mlir import ir

    from wsc.dialect import make_context

    with make_context():
        module = ir.Module.parse((EXAMPLES / "matmul_v3.mlir").read_text())
        UnrollRingBuffer().run(module.operation)
        ptx, info = _lower(str(module))
    report = assemble(ptx)
    assert report.spill_stores == 0 and report.registers == info.entry_registers
    assert ptx.count("wgmma.mma_async.sync") == 4 * 8


@needs_ptxas
def test_matmul_v2_assembles():
    ptx, info = _lower((EXAMPLES / "matmul_v2.mlir").read_text())
    report = assemble(ptx)
    assert report.spill_stores == 0 and "setmaxnreg" not in ptx
    assert info.params == V3_PARAMS


@needs_ptxas
def test_assemble_rejects_ignored_setmaxnreg():
    ptx, _ = _lower((EXAMPLES / "matmul_v3.mlir").read_text())
    uncapped = ptx.replace(".maxntid 160, 1, 1", "").replace(".minnctapersm 1", "")
    with pytest.raises(PtxasError, match="C7508"):
        assemble(uncapped)


@needs_ptxas
def test_assemble_reports_ptx_errors():
    with pytest.raises(PtxasError, match="ptxas failed"):
        assemble(".version 8.0\n.target sm_90a\n.address_size 64\nnonsense\n")


def test_a_wide_k_by_n_b_is_read_n_major_atom_by_atom():
    """A "kn" B stage of 64 K rows by 256 N columns: four 128-byte swizzle
    atoms of 64 columns, each its own TMA box, read by one N-major
    m64n256k16 WGMMA per k16 step (atoms LBO = 64 x 128 B apart, 8-row K
    groups SBO = 1024 B apart, each k step 16 rows = 2048 B further)."""
    b = OperandDescriptors(TileLayout.choose(64, 256, 2), k_major=False)
    assert (b.tile.num_atoms, b.tile.atom_cols) == (4, 64)
    assert (b.leading_byte_offset, b.stride_byte_offset) == (8192, 1024)
    assert [b.offset(k) for k in range(b.k_steps)] == [0, 2048, 4096, 6144]
    ptx, _ = _lower(v3_kernel(b_layout="kn", bn=256, consumers=2, producer_threads=128))
    assert ptx.count("cp.async.bulk.tensor.2d") == 1 + 4  # A's box, then B's four
    wgmmas = [" ".join(line.split()) for line in ptx.splitlines() if "wgmma.mma_async" in line]
    assert wgmmas and all("m64n256k16" in w and w.endswith("p, 1, 1, 0, 1;") for w in wgmmas)


def test_non_negative_proves_what_bounds_checks_may_compare_signed():
    """An index made of block indices, sizes, constants, non-negative loop
    indices and the ops that keep them non-negative is proven >= 0; a plain
    difference or a function argument is not."""
    from mlir import ir

    from wsc.dialect import make_context
    from wsc.ir_utils import non_negative, walk

    text = """
    func.func @f(%arg: index, %x: memref<?x?xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %bx = gpu.block_id x
      %m = memref.dim %x, %c0 : memref<?x?xf32>
      %tiles = arith.ceildivui %m, %c8 : index
      %last = arith.subi %tiles, %c1 overflow<nuw> : index
      %diff = arith.subi %tiles, %c1 : index
      %few = arith.minui %arg, %c8 : index
      %rem = arith.remui %arg, %tiles : index
      %sum = arith.addi %bx, %last : index
      scf.for %i = %c0 to %m step %c1 {
        %at = arith.muli %i, %sum : index
        "test.use"(%at) : (index) -> ()
      }
      scf.for %j = %diff to %m step %c1 {
        "test.use"(%j) : (index) -> ()
      }
      "test.use"(%diff, %few, %rem, %arg) : (index, index, index, index) -> ()
      return
    }
    """
    with make_context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        uses = [op for op in walk(module.operation) if op.name == "test.use"]
        (at,), (j,), (diff, few, rem, arg) = (list(op.operands) for op in uses)
        assert non_negative(at) and non_negative(few) and non_negative(rem)
        assert not non_negative(diff) and not non_negative(arg) and not non_negative(j)
