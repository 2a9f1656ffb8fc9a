"""--unroll-ring-buffer: unroll every ring loop by its number of stages so each
copy uses a constant stage (buffer slot and barrier index).

This is the seed's `self.range(..., unroll=num_stages)`: with constant stages,
shared-memory addresses and WGMMA descriptors fold to constants and no run-time
index into a barrier or register array is left.

Contract
--------
Before: ring loops, i.e. `scf.for %kt = 0 to %n step 1` carrying exactly
(stage, phase) from (0, phase0) (stage 0 is a constant: a persistent kernel's
K loops, which start where the previous tile's stopped, are rejected) and
yielding one `wsc.ring_advance` of them
with num_stages = N (as --warp-specialize produces, or as written by hand);
and optionally a drain loop (as --warp-specialize emits it): N trips from a
ring loop's final position, waiting on barriers[stage] where %n + trip >= N.

After: each ring loop becomes
    scf.for %t = 0 to ceildiv(%n, N) iter_args(%phase = phase0) {
      copy 0:   body with kt = t*N,     stage = 0, phase
      copy j:   scf.if (t*N + j < %n) { body with kt = t*N + j, stage = j, phase }
      yield not %phase          // one flip per trip: every stage wrapped once
    }
so k_tiles not divisible by N, and k_tiles < N, run only the guarded copies
they need. The loop's former results are rebuilt for any later user:
stage = %n mod N, phase = phase0 xor (%n / N odd). A drain becomes, for each
constant stage s < N, `if (s < %n) wait(barriers[s], phase of stage s)`, where
stages below the final stage have wrapped once more than the rest.
A stage computed from a copy's stage by arith ops (the previous stage that
--warp-specialize's wgmma-in-flight releases) is left as those ops on the
constant, which fold during lowering.
No `scf.for` with a non-constant stage remains; anything else that carries a
stage is rejected with a located error. The protocol of the result is checked
by --verify-pipeline's simulator unless `verify=false`.

Options
-------
verify          run the protocol check on the result
where-possible  leave as they are the kernels whose stages must stay run-time
                values: a persistent kernel's K loops (each continues the
                ring where the previous tile's stopped) and a K loop of two K
                tiles per trip (wgmma-in-flight with a product of one K tile,
                two wsc.ring_advance per trip); the protocol check still
                covers them. Without it such a kernel is an error.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from wsc import dialect, ops
from wsc.diagnostics import PassError
from wsc.ir_utils import (
    bool_constant,
    clone_remapped,
    constant_int,
    defining_op,
    index_constant,
    kernels,
    walk,
)
from wsc.pass_registry import Option, WscPass


class UnrollRingBuffer(WscPass):
    ARGUMENT = "unroll-ring-buffer"
    SUMMARY = "Unroll ring loops by their stage count so every stage index is a constant"
    OPTIONS = (
        Option("verify", bool, True, "check the mbarrier protocol of the result"),
        Option(
            "where-possible",
            bool,
            False,
            "leave kernels whose stages stay run-time (persistent, two K tiles per trip)",
        ),
    )

    def run(self, module: ir.Operation) -> None:
        found = kernels(module.operation)
        for kernel in found:
            if self.options.where_possible and _stages_stay_run_time(kernel):
                continue
            # New ops carry the kernel's location, so diagnostics about them are located.
            with kernel.location:
                # Drains first: they read the main loops' results, which the
                # main loops' rewrite replaces.
                drains = [(op, _drain_source(op)) for op in walk(kernel) if op.name == "scf.for"]
                for drain, source in drains:
                    if source is not None:
                        _unroll_drain(drain, source)
                for loop in [
                    op
                    for op in walk(kernel)
                    if op.name == "scf.for" and _ring_advance(op) is not None
                ]:
                    _unroll_ring_loop(loop)
        if self.options.verify and found:
            from wsc.protocol import check_protocol

            check_protocol(module.operation)


def _fail(op: ir.Operation, message: str) -> None:
    raise PassError(op.location, f"--unroll-ring-buffer: {message}")


def _body(loop: ir.Operation) -> ir.Block:
    return loop.regions[0].blocks[0]


def _ring_advance(loop: ir.Operation) -> ir.Operation | None:
    """The wsc.ring_advance a ring loop yields, or None if `loop` is no ring loop."""
    body = _body(loop)
    body_ops = [op.operation for op in body.operations]
    advances = [op for op in body_ops if op.name == "wsc.ring_advance"]
    if not advances:
        return None
    args = list(body.arguments)
    advance = advances[0]
    ring = ops.RingAdvance(advance)
    if (
        len(advances) != 1
        or len(args) != 3
        or [ring.stage, ring.phase] != args[1:]
        or list(body_ops[-1].operands) != [ring.next_stage, ring.next_phase]
    ):
        _fail(
            loop,
            "a ring loop must carry exactly (stage, phase) and yield one wsc.ring_advance of them",
        )
    bounds = loop.opview
    if constant_int(bounds.lowerBound) != 0 or constant_int(bounds.step) != 1:
        _fail(loop, "a ring loop must count from 0 in steps of 1")
    if constant_int(bounds.initArgs[0]) != 0:
        _fail(
            loop,
            "a ring loop must start at stage 0: one that starts where an earlier "
            "loop stopped (a persistent kernel's K loop continues its previous "
            "tile's ring) has no constant stage to unroll to; leave its stages "
            "run-time",
        )
    return advance


def _stages_stay_run_time(kernel: ir.Operation) -> bool:
    """Whether a ring loop of `kernel` advances twice per trip or starts at a
    stage that is no constant 0 (where an earlier loop stopped, other than a
    drain, which continues the loop it drains)."""
    for loop in walk(kernel):
        if loop.name != "scf.for" or _drain_source(loop) is not None:
            continue
        advances = [op for op in _body(loop).operations if op.operation.name == "wsc.ring_advance"]
        if len(advances) > 1:
            return True
        if advances and loop.opview.initArgs and constant_int(loop.opview.initArgs[0]) != 0:
            return True
    return False


def _drain_source(loop: ir.Operation) -> ir.Operation | None:
    """The ring loop whose last releases `loop` drains, if `loop` is a drain:
    N trips from that loop's final position, each waiting on barriers[stage]
    only where a fill happened N positions earlier, then advancing (the form
    --warp-specialize emits)."""
    inits = list(loop.opview.initArgs)
    source = defining_op(inits[0]) if len(inits) == 2 else None
    if source is None or source.name != "scf.for" or _ring_advance(source) is None:
        return None
    body = [op.operation for op in _body(loop).operations]
    names = [op.name for op in body]
    guard_ops = (
        [op.name for op in walk(body[2])]
        if names[:3] == ["arith.addi", "arith.cmpi", "scf.if"]
        else []
    )
    if (
        names != ["arith.addi", "arith.cmpi", "scf.if", "wsc.ring_advance", "scf.yield"]
        or guard_ops != ["wsc.mbarrier_wait", "scf.yield"]
        or inits != list(source.results)
        or body[0].opview.rhs != source.opview.upperBound
    ):
        _fail(
            loop,
            "a loop that starts at another ring loop's final stage must be its "
            "drain: N trips, waiting on barriers[stage] where k_tiles + trip >= N, "
            "then advancing",
        )
    return source


def _num_stages(advance: ir.Operation) -> int:
    return ops.RingAdvance(advance).num_stages


def _not(value: ir.Value) -> ir.Value:
    return arith.XOrIOp(value, bool_constant(True)).result


def _final_position(source: ir.Operation, num_stages: int) -> tuple[ir.Value, ir.Value]:
    """(stage, phase) after `source` ran its %n trips: %n mod N and the initial
    phase flipped once per completed wrap, i.e. (%n / N) times."""
    loop = source.opview
    trips = loop.upperBound
    stages = index_constant(num_stages)
    stage = arith.RemUIOp(trips, stages).result
    wraps = arith.DivUIOp(trips, stages).result
    odd = arith.IndexCastOp(ir.IntegerType.get_signless(1), wraps).result
    phase = arith.XOrIOp(loop.initArgs[1], odd).result
    return stage, phase


def _unroll_ring_loop(loop: ir.Operation) -> None:
    advance = _ring_advance(loop)
    num_stages = _num_stages(advance)
    body = _body(loop)
    iv, stage_arg, phase_arg = body.arguments
    copied = [
        op.operation
        for op in body.operations
        if op.operation.name not in ("wsc.ring_advance", "scf.yield")
    ]
    trips = loop.opview.upperBound
    with ir.InsertionPoint(loop):
        stages = index_constant(num_stages)
        rounds = arith.CeilDivUIOp(trips, stages).result
        initial_phase = loop.opview.initArgs[1]
        unrolled = scf.ForOp(index_constant(0), rounds, index_constant(1), [initial_phase])
    with ir.InsertionPoint(unrolled.body):
        phase = unrolled.inner_iter_args[0]
        first_tile = arith.MulIOp(unrolled.induction_variable, stages).result
        for stage in range(num_stages):
            if stage == 0:
                # t < ceildiv(n, N), so copy 0 is always within the K tiles.
                _clone_copy(copied, {iv: first_tile, phase_arg: phase}, stage_arg, stage)
                continue
            k_tile = arith.AddIOp(first_tile, index_constant(stage)).result
            in_range = arith.CmpIOp(arith.CmpIPredicate.ult, k_tile, trips).result
            guard = scf.IfOp(in_range)
            with ir.InsertionPoint(guard.then_block):
                _clone_copy(copied, {iv: k_tile, phase_arg: phase}, stage_arg, stage)
                scf.YieldOp([])
        scf.YieldOp([_not(phase)])
    if any(True for result in loop.results for _ in result.uses):
        with ir.InsertionPoint(loop):
            final_stage, final_phase = _final_position(loop, num_stages)
        loop.results[0].replace_all_uses_with(final_stage)
        loop.results[1].replace_all_uses_with(final_phase)
    loop.erase()


def _clone_copy(
    body_ops: list[ir.Operation], mapping: dict, stage_arg: ir.Value, stage: int
) -> None:
    """One unrolled copy of a ring loop's body, at stage `stage`."""
    mapping[stage_arg] = index_constant(stage)
    for op in body_ops:
        clone_remapped(op, mapping)


def _unroll_drain(drain: ir.Operation, source: ir.Operation) -> None:
    """Unroll the drain `drain` of ring loop `source`."""
    num_stages = _num_stages(_ring_advance(source))
    guard = _body(drain).operations[2].operation
    wait = next(op for op in walk(guard) if op.name == "wsc.mbarrier_wait")
    barriers = ops.MbarrierWait(wait).barriers
    trips = source.opview.upperBound
    # The unrolled waits are the drain's wait: diagnostics about them point at it.
    with ir.InsertionPoint(drain), wait.location:
        final_stage, final_phase = _final_position(source, num_stages)
        for stage in range(num_stages):
            constant_stage = index_constant(stage)
            filled = arith.CmpIOp(arith.CmpIPredicate.ult, constant_stage, trips).result
            # Stages before the final one were refilled once more in the last,
            # partial round, so their next phase is the other one.
            wrapped = arith.CmpIOp(arith.CmpIPredicate.ult, constant_stage, final_stage).result
            phase = arith.SelectOp(wrapped, _not(final_phase), final_phase).result
            guard = scf.IfOp(filled)
            with ir.InsertionPoint(guard.then_block):
                dialect.mbarrier_wait(barriers, constant_stage, phase)
                scf.YieldOp([])
    drain.erase()
