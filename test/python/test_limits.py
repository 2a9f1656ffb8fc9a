"""Hardware limits are compile errors that name the limit and the value.

The IR-level rules have lit tests (test/Dialect/hardware-limits.mlir and the
`*-invalid.mlir` files); here are the same rules reached from a matmul
configuration through the compile driver, and the ptxas rule that a
`setmaxnreg` ptxas ignores (warning C7508) fails the build. The runtime's
TMA checks (16-byte aligned base, row strides, box limits) are tested in
test_runtime.py (`test_misaligned_base`, `test_plan_rejects_tma_violations`).
"""

import re
import sys
import textwrap
from pathlib import Path

import pytest

from wsc.codegen import find_ptxas
from wsc.codegen.ptxas import PtxasError, assemble
from wsc.compiler import CompileError
from wsc.kernels.matmul.build import compile_matmul
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem


@pytest.mark.parametrize(
    "config, message",
    [
        (
            dict(block_m=100),
            "block_m must be a multiple of 64 (the WGMMA M) up to 256 (a TMA box), got 100",
        ),
        (dict(block_n=12), "block_n must be a multiple of 8 up to 256 (the WGMMA N), got 12"),
        (dict(block_n=512), "block_n must be a multiple of 8 up to 256 (the WGMMA N), got 512"),
        (dict(block_k=40), "block_k must be a multiple of 16 (the WGMMA K) up to 128"),
        (
            dict(block_k=256),
            "block_k must be a multiple of 16 (the WGMMA K) up to 128 (a 128-byte "
            "swizzled row of fp8), got 256",
        ),
        (dict(num_stages=300), "num_stages must be 1 to 227, got 300"),
        (
            dict(block_m=16, block_n=100, swap_ab=True),
            "block_n must be a multiple of 64 (the WGMMA M) up to 256 (a TMA box) with "
            "swap_ab = True, got 100",
        ),
        (
            dict(block_m=12, block_n=64, swap_ab=True),
            "block_m must be a multiple of 8 up to 256 (the WGMMA N) with swap_ab = True, got 12",
        ),
        (
            dict(block_m=16, block_n=64, swap_ab=True, tma_store=True),
            "swap_ab = True stores the transposed tile from registers",
        ),
        (
            dict(block_m=64, num_consumer_groups=2),
            "block_m = 64 cannot be split over 2 consumer warpgroups in multiples of 64 rows",
        ),
        (
            # Found by the kernel fuzzer's GPU sample: ptxas refused to assemble it (C7602).
            dict(block_m=256, block_n=256, num_consumer_groups=4, producer="warp"),
            "each consumer group's 64x256 f32 accumulator takes 128 registers per thread "
            "and its WGMMA about 26 more, but ptxas gives each thread of the 544-thread "
            "block 96: use a narrower tile",
        ),
        (
            # The remedy names only the changes with which the accumulator fits.
            dict(block_m=128, block_n=256, num_consumer_groups=1, producer="warpgroup"),
            "but ptxas gives each thread of the 256-thread block 255: use "
            "num_consumer_groups = 2 or a narrower tile",
        ),
        (
            # Ping-pong takes exactly two groups: none other is offered.
            dict(block_m=128, block_n=192, ping_pong=True, persistent=True, num_consumer_groups=2),
            "gives each thread of the 288-thread block 168: use a narrower tile",
        ),
    ],
)
def test_a_field_beyond_the_hardware_is_refused_before_compiling(config, message):
    """The rules the verifier checks in the IR (test/Dialect/hardware-limits.mlir),
    stated in terms of the config's own fields before any IR is built."""
    with pytest.raises(ValueError) as error:
        MatmulConfig(**config)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "config, b_layout, message",
    [
        (dict(block_n=8), "kn", "B's tile rows are 8 x 2 B with b_layout 'kn'"),
        (dict(block_n=8, tma_store=True), "nk", "the staged epilogue's tile rows are 8 x 2 B"),
        (dict(block_n=8, cluster_m=2), "nk", "a multiple of 16 rows"),
        (
            dict(block_k=128),
            "nk",
            "block_k must be a multiple of 16 (the WGMMA K of f16) up to 64 (a 128-byte "
            "swizzled row), got 128",
        ),
        # Once a shared-memory error of the lowering, located in wsc's own build.py.
        (
            dict(num_stages=8),
            "nk",
            "num_stages = 8: a stage holds a 128x64 tile of A and a 128x64 tile of B, 32768 "
            "bytes of f16: 262144 bytes, more than the 232448 of shared memory a block may "
            "use; at most 7 stages fit",
        ),
        (
            dict(
                block_n=256,
                num_stages=4,
                tma_store=True,
                num_consumer_groups=2,
                producer="warpgroup",
            ),
            "nk",
            "num_stages = 4: a stage holds a 128x64 tile of A and a 256x64 tile of B, 49152 "
            "bytes of f16, and the staged C tile takes 65536: 262144 bytes, more than the "
            "232448 of shared memory a block may use; at most 3 stages fit",
        ),
        # A "kn" row of 112 columns is padded to two 128-byte atoms: the ring counts them.
        (
            dict(
                block_n=112,
                num_stages=7,
                tma_store=True,
                num_consumer_groups=2,
                producer="warpgroup",
            ),
            "kn",
            "num_stages = 7: a stage holds a 128x64 tile of A and a 64x128 tile of B, 32768 "
            "bytes of f16, and the staged C tile takes 28672: 258048 bytes, more than the "
            "232448 of shared memory a block may use; at most 6 stages fit",
        ),
    ],
)
def test_tiles_tma_cannot_copy_are_refused_with_the_problem(tmp_path, config, b_layout, message):
    """Rules of a config on a problem, found by the kernel fuzzer
    (test/fuzz/kernels.py) as build errors inside wsc's own matmul."""
    problem = MatmulProblem("f16", "f16", b_layout)
    with pytest.raises(ValueError, match=re.escape(message)):
        compile_matmul(64, 256, 256, problem, MatmulConfig(**config), tmp_path / "x")


@pytest.mark.parametrize(
    "problem, n, k, message",
    [
        (
            MatmulProblem("f16", "f32", "nk"),
            256,
            100,
            "A: its rows are 200 bytes (K = 100 x 2 B); TMA needs a row stride that is a multiple of "
            "16 bytes, so K must be a multiple of 8",
        ),
        (
            MatmulProblem("bf16", "f32", "kn"),
            260,
            256,
            "B: its rows are 520 bytes (N = 260 x 2 B); TMA needs a row stride that is a multiple of "
            "16 bytes, so N must be a multiple of 8",
        ),
    ],
)
def test_tma_row_strides_are_checked_at_compile_time(tmp_path, problem, n, k, message):
    with pytest.raises(ValueError) as error:
        compile_matmul(256, n, k, problem, MatmulConfig(), tmp_path / "x")
    assert message in str(error.value)


def _fake_ptxas(tmp_path, report: str):
    """A stand-in ptxas that writes an empty cubin and prints `report`, so the
    verdict on ptxas's output is tested without CUDA."""
    script = tmp_path / "ptxas"
    script.write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        args = sys.argv[1:]
        open(args[args.index("-o") + 1], "wb").close()
        sys.stderr.write({report!r})
        """)
    )
    script.chmod(0o755)
    return str(script)


_CLEAN_REPORT = (
    "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    "ptxas info    : Used 168 registers, used 1 barriers\n"
)


def test_ignored_setmaxnreg_fails_the_build(tmp_path):
    report = _CLEAN_REPORT + (
        "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' "
        "ignored; unable to determine register count at entry\n"
    )
    with pytest.raises(PtxasError, match=r"ptxas ignored setmaxnreg \(warning C7508\)"):
        assemble(".version 9.0\n", ptxas=_fake_ptxas(tmp_path, report))


def test_clean_ptxas_report_passes(tmp_path):
    report = assemble(".version 9.0\n", ptxas=_fake_ptxas(tmp_path, _CLEAN_REPORT))
    assert report.registers == 168 and report.warnings == []


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_registers_ptxas_cannot_allocate_are_a_located_error(tmp_path):
    """Found by sweeping examples/attention.py's configs: with four consumer
    groups and a head of 128 its two 64x128 f32 accumulators per thread
    exceed the 96 registers a 640-thread block gives each thread, and ptxas
    stops (C7600). The error is located at the author's largest register
    tile, as a spill error is."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from attention import attention

    with pytest.raises(CompileError) as error:
        attention(num_consumer_groups=4, block_m=256, head=128).compile()
    text = str(error.value)
    assert re.search(r"attention\.py:\d+:\d+: error: ptxas cannot allocate", text), text
    assert "C7600" in text and "64x128 f32 (64 registers)" in text


@pytest.mark.parametrize(
    "block_n, b_layout, tile",
    [
        (112, "kn", (64, 128)),  # 224-byte rows: padded to two 128-byte atoms
        (176, "kn", (64, 192)),
        (128, "kn", (64, 128)),
        (96, "kn", (64, 96)),  # 192-byte rows take 64-byte atoms as they are
        (32, "kn", (64, 32)),  # narrower than one atom
        (112, "nk", (112, 64)),
    ],
)
def test_b_stage_tile_pads_kn_rows_that_would_take_32_byte_atoms(block_n, b_layout, tile):
    config = MatmulConfig(block_n=block_n)
    assert config.b_stage_tile(MatmulProblem("f16", "f16", b_layout)) == tile
