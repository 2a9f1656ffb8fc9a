"""The passes' output obeys the mbarrier protocol: --warp-specialize and
--unroll-ring-buffer, over num_stages 1..8 and 1, 2 and 4 consumer
warpgroups, simulated for every k_tiles from 1 to 40 by --verify-pipeline's
simulator, with no violation."""

import pytest
from mlir import ir

from wsc.diagnostics import DiagnosticEngine
from wsc.dialect import make_context
from wsc.kernels.matmul.build import build_matmul
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
from wsc.passes.warp_specialize import WarpSpecialize
from wsc.protocol import check_protocol

MAX_K_TILES = 40


def _run(module, wsc_pass):
    engine = DiagnosticEngine("<test>")
    assert wsc_pass.apply(module.operation, engine)
    assert not engine.diagnostics, [d.format() for d in engine.diagnostics]


@pytest.mark.parametrize("num_stages", range(1, 9))
@pytest.mark.parametrize("groups,producer", [(1, "warp"), (2, "warpgroup"), (4, "warpgroup")])
def test_specialized_and_unrolled_kernels_are_clean(num_stages, groups, producer):
    # block_k = 32 keeps 8 stages of a 256-row A tile within the 227 KB of
    # shared memory a ring may take.
    config = MatmulConfig(
        block_m=64 * groups if groups > 1 else 128,
        block_k=32,
        num_stages=num_stages,
        num_consumer_groups=groups,
        producer=producer,
    )
    with make_context(), ir.Location.unknown():
        module = build_matmul(MatmulProblem(), config)
        _run(
            module,
            WarpSpecialize(
                num_stages=num_stages, num_consumer_groups=groups, producer=producer, verify=False
            ),
        )
        check_protocol(module.operation, max_k_tiles=MAX_K_TILES)
        _run(module, UnrollRingBuffer(verify=False))
        check_protocol(module.operation, max_k_tiles=MAX_K_TILES)
