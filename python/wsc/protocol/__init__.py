"""A static check of the mbarrier protocol of wsc kernels, by simulation.

`check_protocol(module)` runs every kernel of a module (a func.func with
`wsc.num_threads`) on K extents of 1 .. 3*num_stages+1 tiles, whole and with
the last tile of every dim ragged (one element: roles that count tiles
differently, as floor and ceiling, part only there), and raises a
`ProtocolViolation`, a located `PassError`, at the first synchronisation bug it
finds. Block 0 of a grid of one block is simulated; every dim that is not a K
extent is one tile long, and, for a persistent kernel (one that reads
gpu.grid_dim to stride over tiles), also two tiles long, so its block walks
four tiles and the ring carries over from tile to tile. A kernel launched in
clusters (`wsc.cluster_size` = n) is simulated as one whole cluster: n
blocks, each with its own processes, rings and barriers, block x = rank, a grid
of n blocks; a multicast copy lands its slice in every block's ring and
completes on every block's barrier, a cluster arrive reaches every block's
barrier, and a `wsc.cluster_sync` waits for every process of the cluster (and
publishes the barriers to the other blocks, which a block-wide sync does
not). Passes call it on their own output; `--verify-pipeline` wraps it.

The kernel is interpreted concretely. Each thread group is one process: every
`wsc.role` is one (all its threads run the same code), and the block's threads
outside every role are one more (in the non-specialized form that is the whole
block). Every process runs the kernel body, entering only its own role's
`scf.if`; an `scf.if` on `wsc.elect` is run as the elected thread (a
`wsc.elect` or `wsc.role` value used otherwise than as such a condition is
refused: which threads take a branch on arithmetic of it is not known; so
is a wait under `wsc.elect` for the copies of a stage its role's threads
read, which the others would read unwaited). The
processes share the ring buffers, the mbarriers and the TMA copies in flight,
and a scheduler interleaves them at every barrier, copy and WGMMA step.

One interleaving cannot show every race, so each K extent runs under four
schedules, the first two each the worst case for one side of the pipeline:

  readers ahead     copies land as late as possible (only when no process can
                    move otherwise, the oldest on a barrier some process waits
                    on first) and processes that issue no copy run first: a
                    consumer that reads before its data has landed is caught;
  producers ahead   copies land as soon as they are issued and processes that
                    issue copies run first: a producer that refills a stage
                    before every reader has read it is caught;
  producers ahead,  the same with the other processes (consumer groups, and
  readers reversed  CTAs) in the reverse order: a group that releases a stage
                    before it reads it, which passes while it runs ahead of
                    the other groups, is caught when it runs behind them;
  readers ahead,    as readers ahead, the newest waited-for copy landing
  newest first      first: a group reading a copy that only another group's
                    wait covers (Q waited for by one group of two) is caught;
                    run where two or more thread groups wait for copies.

The first schedule runs again with the last tile of every dim ragged (one
element).

What is checked, each reported at the op that commits it (kind in brackets):

  [stale-read]          a WGMMA reads a stage whose copy has not landed, or
                        not the copy it expects: the n-th read of a stage by a
                        process must see the n-th copy into it (on a ring whose
                        copies each go to one reader, the copy whose landing
                        completed the phase the process's wait saw);
                        reported at the process's wait on the stage's full
                        barrier instead when that wait returned with no new
                        phase completed (its parity one phase behind);
  [stage-overwritten]   a copy into a stage that a WGMMA still reads, or whose
                        previous copy some reader has not read (no reader, on
                        a ring whose copies each go to one reader: lost tile);
  [early-release]       a plain arrive while the process's own un-retired
                        WGMMAs read that stage index of a ring the arrive
                        hands back: one a copy issuer filled after waiting on
                        that barrier array (before any such fill, any ring);
                        or an arrive under wsc.elect releasing a stage its
                        process's threads read (wsc.load_shared) with no
                        wsc.sync since: only the elected thread is done;
  [staging-race]        a TMA store of a stage that wsc.store_shared wrote
                        without a wsc.fence_proxy_async and then a wsc.sync
                        after it, or a wsc.store_shared into a stage that
                        a TMA store may still read (no wsc.tma_store_wait
                        by the storing thread, then a wsc.sync, in between);
                        a wsc.coalesced_store of a stage written without a
                        wsc.sync after the writes, or a wsc.store_shared
                        into one that other threads may still be copying
                        (no wsc.sync after the wsc.coalesced_store);
  [register-race]       an op reads a register tile that a WGMMA group still
                        in flight writes (before the wsc.wgmma_wait_group
                        that retires it), or writes one that such a group
                        reads or writes (WGMMAs accumulating into the same
                        tile are ordered by the hardware: allowed);
  [expect-tx-mismatch]  the bytes an expect_tx declares differ from those the
                        copies completing in its phase deliver;
  [stage-out-of-range]  a stage index outside its ring or barrier array;
  [barrier-before-init] a barrier op before the first block-wide wsc.sync
                        after the barriers' allocation;
  [over-arrival]        more arrivals than the current phase has pending;
  [phase-overrun]       a phase completes while a waiter for the previous one
                        has not returned (its wait then misses that phase);
  [under-arrival]       at the end, a phase left with part of its arrivals;
  [deadlock]            every process blocked and no copy in flight: blamed
                        on the copies of a phase no expect_tx opened (they
                        landed, the arrival it needs never comes), else on a
                        wait on barriers no op of the kernel arrives on, else
                        on a wait of a thread group on an array it releases
                        itself, with no arrival yet in the phase (a wait on
                        the wrong array), else
                        on a wait on a barrier stuck with part of its
                        arrivals, else on the one that blocked last (it closed
                        the cycle: the others waited while it could still run);
  [missing-drain]       a producer (a process issuing copies) exits before its
                        waits have seen every release of the barriers other
                        processes release stages on.

Split-K (blocks that each sum a share of K for the same output tile hand
their partial sums over with wsc.partial_store, wsc.partial_arrive and
wsc.partial_reduce): every block runs the same code, so the simulated block's
order of store, arrival and reduction stands for every split's. Its arrivals
are taken as the last of their splits in one run and as earlier ones in
another, each thread group's partial sums tracked by their first row:

  [early-reduce]        a wsc.partial_reduce of rows whose arrival was not the
                        last (or has not happened): other splits' partial
                        sums may not have landed;
  [partial-after-arrival] a wsc.partial_store of rows after the group arrived
                        on their counter: the last split may reduce first;
  [arrival-without-partial] an arrival on rows with no partial sum stored
                        since the last one, or a partial sum never published;
  [splits-mismatch]     the ops on one partial sum count different splits;
  [partial-shared]      two thread groups of a block hold partial sums of the
                        same rows at once: one workspace slot and counter;
  [store-before-reduce] a wsc.store of a tile whose partial sums its group
                        handed over, before wsc.partial_reduce added the other
                        splits' (or by a split whose arrival was not the last);
  [counter-left-set]    the last split exits without wsc.partial_reduce,
                        which sets the counter back to zero for the next launch.

A ring's copies each go to one reader (ping-pong consumer groups taking
whole tiles in turn) when two processes' WGMMAs read the same rows of its A
tile: they must be computing different output tiles. Else every reader reads
every copy (each its rows of the tile).

When several schedules fail, the report is the most telling violation, in
the order above: a data hazard (what the bug does to a tile) before the
barrier symptom it causes, the earlier schedule's on a tie.

mbarrier semantics: a barrier starts in phase 0; a phase completes when its
`arrival_count` arrivals are in and the transaction bytes declared by
`wsc.mbarrier_arrive_expect_tx` have been delivered by the copies completing
on it. A wait for parity P returns once the latest completed phase has parity
P, i.e. while (completed phases & 1) != P: a wait for parity 1 passes on a
fresh barrier (the producer's first pass over the empty barriers), a wait for
parity 0 blocks until the first completion (the consumer's first full wait).
A plain `wsc.mbarrier_arrive` counts one arrival per thread of the process
(one under `wsc.elect`, one per warp with `per_warp`); an expect_tx counts one.
"""

from wsc.protocol.simulate import check_protocol
from wsc.protocol.violations import (
    ARRIVAL_WITHOUT_PARTIAL,
    BARRIER_BEFORE_INIT,
    COUNTER_LEFT_SET,
    DEADLOCK,
    EARLY_REDUCE,
    EARLY_RELEASE,
    MISSING_DRAIN,
    OVER_ARRIVAL,
    PARTIAL_AFTER_ARRIVAL,
    PARTIAL_SHARED,
    PHASE_OVERRUN,
    REGISTER_RACE,
    SPLITS_MISMATCH,
    STAGE_OUT_OF_RANGE,
    STAGE_OVERWRITTEN,
    STAGING_RACE,
    STALE_READ,
    STORE_BEFORE_REDUCE,
    TX_MISMATCH,
    UNDER_ARRIVAL,
    ProtocolViolation,
)

__all__ = [
    "check_protocol",
    "ProtocolViolation",
    "STALE_READ",
    "STAGE_OVERWRITTEN",
    "EARLY_RELEASE",
    "STAGING_RACE",
    "REGISTER_RACE",
    "TX_MISMATCH",
    "STAGE_OUT_OF_RANGE",
    "BARRIER_BEFORE_INIT",
    "OVER_ARRIVAL",
    "PHASE_OVERRUN",
    "UNDER_ARRIVAL",
    "DEADLOCK",
    "MISSING_DRAIN",
    "EARLY_REDUCE",
    "PARTIAL_AFTER_ARRIVAL",
    "ARRIVAL_WITHOUT_PARTIAL",
    "PARTIAL_SHARED",
    "STORE_BEFORE_REDUCE",
    "SPLITS_MISMATCH",
    "COUNTER_LEFT_SET",
]
