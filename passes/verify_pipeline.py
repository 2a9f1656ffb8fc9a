"""--verify-pipeline: a static check of the mbarrier protocol of every kernel.

Contract: the input is any module the wsc verifier accepts; the pass leaves it
unchanged. Each kernel (a func.func with `wsc.num_threads`) is simulated by
`wsc.protocol.check_protocol` for K extents of 1 .. max-k-tiles tiles (each
also with the last tile of every dim ragged), and the first violation is reported as a
located error at the offending op, with the k_tiles and num_stages it shows up
at: a deadlocked wait, an over- or
under-arrival, a phase completing under a waiter that has not returned, an
expect_tx whose bytes differ from its copies', a stage released or overwritten
while a WGMMA reads it (or released by an elected thread while the others may
still read it), a read before its data landed, a barrier used before a
block-wide wsc.sync made its initialization visible, a producer that exits
before every stage it filled was released (missing drain), in a cluster a
barrier another CTA's copy or arrive reaches before a wsc.cluster_sync published
it (the simulation runs every CTA of one cluster), and a staged
epilogue that copies a staging tile its threads have not synced (and, for a
TMA store, fenced), or writes one a copy may still read. An op the simulator cannot interpret is
an error too.

Options:
  max-k-tiles=<int>  the largest K extent checked, in tiles (0: 3*num_stages+1,
                     so that every stage wraps around at least three times; at
                     most MAX_SWEEP)
  k-tiles=<int>      check this K extent only (0: sweep 1 .. max-k-tiles; at
                     most MAX_EXTENT)
"""

from __future__ import annotations

from mlir import ir

from wsc.pass_registry import Option, OptionError, WscPass
from wsc.protocol import check_protocol

#: The largest sweep and single K extent the options take: a sweep's cost
#: grows with the square of its extent (256 takes seconds, 100000 hours).
MAX_SWEEP = 256
MAX_EXTENT = 4096


class VerifyPipeline(WscPass):
    ARGUMENT = "verify-pipeline"
    SUMMARY = "Check the mbarrier protocol of each kernel by simulating it"
    OPTIONS = (
        Option("max-k-tiles", int, 0, "largest K extent checked, in tiles (0: 3*num_stages+1)"),
        Option("k-tiles", int, 0, "check only this K extent, in tiles (0: sweep)"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        for name, limit in (("max_k_tiles", MAX_SWEEP), ("k_tiles", MAX_EXTENT)):
            value = getattr(self.options, name)
            if not 0 <= value <= limit:
                raise OptionError(
                    f"option {{{name.replace('_', '-')}}} must be 0 to {limit}, got {value} "
                    f"(a sweep simulates every extent up to {{max-k-tiles}}, {MAX_SWEEP} in "
                    f"seconds; {{k-tiles}} checks one extent, up to {MAX_EXTENT})",
                    self.ARGUMENT,
                )

    def run(self, module: ir.Operation) -> None:
        check_protocol(
            module,
            max_k_tiles=self.options.max_k_tiles or None,
            k_tiles=self.options.k_tiles or None,
        )
