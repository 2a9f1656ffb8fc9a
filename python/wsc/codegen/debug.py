"""Debug instrumentation the lowering can add to a kernel: a bound on every
mbarrier wait, and random delays in one role.

* `wait_spin_limit = N` (`--convert-wsc-to-nvvm=wait-spin-limit=N`): every
  mbarrier wait gives up after N failed `mbarrier.try_wait` probes. The
  thread then prints (CUDA's device `vprintf`) which wait it was: block,
  thread and role, the barrier array (`full`/`empty`, as the protocol names
  them), the stage and the phase parity it waited for, and where the wait is
  in the source; then it executes `trap`, which ends the launch with an
  error the runtime raises (`wsc.runtime.KernelFault`). A kernel that would
  hang forever instead fails, and says where. Each probe may itself suspend
  the thread for a hardware-dependent time, so pick N large enough that a
  healthy (possibly sanitizer-slowed) wait never reaches it. The printf call
  makes ptxas serialize the WGMMAs around it (its info C7510), so such a
  build is for finding hangs, not for timing.
* `delay_role = NAME` (`delay-role=NAME`): before every mbarrier wait and
  arrive of the roles named NAME (or NAME followed by digits), a thread
  sleeps a pseudo-random 0 .. `delay_max_ns` nanoseconds (`nanosleep`,
  drawn from the SM clock and the thread id). A correct protocol gives the
  same results under any such delays; a race shows up as a changed result.

Neither changes anything when off (the defaults).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, nvvm, scf

from wsc.codegen import emit as E
from wsc.diagnostics import file_line_col

#: nanosleep's largest duration (PTX ISA: [0, 1 ms]).
MAX_NANOSLEEP_NS = 1_000_000
#: The first words of every spin-limit report, for tools that look for it.
REPORT_PREFIX = "wsc: wait-spin-limit"
_PRINTF = "vprintf"


@dataclass(frozen=True)
class DebugOptions:
    """What `debug.py`'s module docstring describes; the defaults add nothing."""

    wait_spin_limit: int = 0
    delay_role: str = ""
    delay_max_ns: int = 2000

    def __post_init__(self):
        if not 0 <= self.wait_spin_limit < 1 << 31:
            raise ValueError(f"wait-spin-limit must be in [0, 2^31), got {self.wait_spin_limit}")
        if not 1 <= self.delay_max_ns <= MAX_NANOSLEEP_NS:
            raise ValueError(
                f"delay-max-ns must be in [1, {MAX_NANOSLEEP_NS}] (nanosleep's "
                f"range), got {self.delay_max_ns}"
            )

    def delays(self, role_name: str | None) -> bool:
        """Whether threads of the role `role_name` get random delays."""
        if not self.delay_role or role_name is None:
            return False
        return re.fullmatch(re.escape(self.delay_role) + r"\d*", role_name) is not None


def barrier_names(barrier_ops: list[ir.Operation]) -> dict[ir.Operation, str]:
    """`full` for barrier arrays TMA copies complete on, `empty` for the
    others, numbered when a kernel has several of a kind."""
    kinds = {}
    for op in barrier_ops:
        full = any(
            use.owner.name in ("wsc.tma_load", "wsc.mbarrier_arrive_expect_tx")
            for use in op.result.uses
        )
        kinds[op] = "full" if full else "empty"
    names = {}
    for op, kind in kinds.items():
        same = [other for other, k in kinds.items() if k == kind]
        names[op] = kind if len(same) == 1 else f"{kind}{same.index(op)}"
    return names


_PTX_STRING = re.compile(r"\.b8 wsc_debug_\w+\[\d+\] = \{([\d,\s]+)\}")


def reports_in_ptx(ptx: str) -> list[str]:
    """The spin-limit report formats a kernel's PTX carries (NVPTX prints
    string constants as byte arrays), for tests and tools to look for."""
    return [
        bytes(int(b) for b in match.group(1).split(",")).rstrip(b"\0").decode()
        for match in _PTX_STRING.finditer(ptx)
    ]


def _escape(text: str) -> str:
    """`text` as literal printf format text."""
    return text.replace("%", "%%")


class DebugEmitter:
    """Emits the instrumentation into one kernel being lowered.

    `module` receives the globals (format strings, the vprintf declaration);
    `entry` is an insertion point in the kernel's entry block, where the one
    printf argument buffer lives (an alloca there is static, not dynamic)."""

    _FIELDS = 6  # tid, ctaid.x, ctaid.y, ctaid.z, stage, parity

    def __init__(
        self, options: DebugOptions, module: ir.Module, entry: ir.InsertionPoint, kernel_name: str
    ):
        self.options = options
        self.module = module
        self.entry = entry
        self.kernel_name = kernel_name
        self.buffer: ir.Value | None = None
        self.strings: dict[str, str] = {}

    # -- module-level symbols

    def _symbols(self) -> set[str]:
        return {
            ir.StringAttr(op.attributes["sym_name"]).value
            for op in self.module.body.operations
            if "sym_name" in op.attributes
        }

    def _declare_printf(self) -> None:
        if _PRINTF in self._symbols():
            return
        with ir.InsertionPoint.at_block_begin(self.module.body):
            llvm.LLVMFuncOp(_PRINTF, ir.TypeAttr.get(ir.Type.parse("!llvm.func<i32 (ptr, ptr)>")))

    def _string(self, text: str) -> ir.Value:
        """A pointer to a global constant holding `text` (one global per text)."""
        name = self.strings.get(text)
        if name is None:
            taken = self._symbols()
            number = len(self.strings)
            while f"wsc_debug_{self.kernel_name}_{number}" in taken:
                number += 1
            name = self.strings[text] = f"wsc_debug_{self.kernel_name}_{number}"
            data = text.encode()
            with ir.InsertionPoint.at_block_begin(self.module.body):
                llvm.GlobalOp(
                    E.array_of(E.i8(), len(data)),
                    name,
                    ir.Attribute.parse("#llvm.linkage<internal>"),
                    constant=True,
                    value=ir.StringAttr.get(text),
                )
        return llvm.AddressOfOp(E.ptr(), name).result

    def _printf(self, text: str, values: list[ir.Value]) -> None:
        """vprintf(text, values...) with i32 values (at most _FIELDS)."""
        self._declare_printf()
        struct = E.struct_of(E.i32(), self._FIELDS)
        if self.buffer is None:
            with self.entry:
                self.buffer = E.alloca(struct, alignment=8)
        for index, value in enumerate(values):
            E.store(value, E.gep(self.buffer, [0, index], struct))
        llvm.CallOp(
            E.i32(),
            [self._string(text), self.buffer],
            [],
            [],
            callee=ir.FlatSymbolRefAttr.get(_PRINTF),
        )

    # -- instrumentation

    def delay(self, tid: ir.Value) -> None:
        """Sleep a pseudo-random 0 .. delay_max_ns ns (clock and thread mixed)."""
        i32 = E.i32()
        mixed = E.xori(
            nvvm.read_ptx_sreg_clock(i32), E.muli(tid, E.const(0x9E3779B9 - (1 << 32), i32))
        )
        mixed = E.muli(mixed, E.const(0x85EBCA6B - (1 << 32), i32))
        mixed = E.xori(mixed, E.shrui(mixed, E.const(16, i32)))
        span = self.options.delay_max_ns + 1
        nanoseconds = arith.remui(mixed, E.const(span, i32))
        E.inline_asm("nanosleep.u32 $0;", "r", [nanoseconds])

    def bounded_wait(
        self,
        address32: ir.Value,
        parity32: ir.Value,
        *,
        tid: ir.Value,
        stage32: ir.Value,
        barrier: str,
        role: str | None,
        location: ir.Location,
    ) -> None:
        """mbarrier.try_wait.parity until the phase completes, or report and
        trap after wait_spin_limit failed probes."""
        i32 = E.i32()
        limit = self.options.wait_spin_limit
        name, line, col = file_line_col(location)
        # Text parsed from a string has the buffer name "-".
        where = (
            ""
            if line is None
            else f" (wait at line {line}, column {col})"
            if name in (None, "", "-")
            else f" (wait at {name}:{line}:{col})"
        )
        who = f", role {role}" if role else ""
        text = (
            f"{REPORT_PREFIX}: kernel {_escape(self.kernel_name)}: thread %d of block "
            f"(%d, %d, %d){_escape(who)} gave up after {limit} tries waiting on barrier "
            f"{_escape(barrier)}, stage %d, phase parity %d{_escape(where)}; trapping\n\0"
        )
        loop = scf.WhileOp([i32], [E.const(0, i32)])
        before = ir.Block.create_at_start(loop.before, [i32])
        after = ir.Block.create_at_start(loop.after, [i32])
        with ir.InsertionPoint(before):
            ready = E.inline_asm(E.TRY_WAIT_PARITY_ASM, "=r,r,r", [address32, parity32], i32)
            again = E.cmpi("eq", ready, E.const(0, i32))
            scf.ConditionOp(again, [before.arguments[0]])
        with ir.InsertionPoint(after):
            tries = E.addi(after.arguments[0], E.const(1, i32))
            give_up = E.if_then(E.cmpi("uge", tries, E.const(limit, i32)))
            with E.then_body(give_up):
                block = [E.special_register("ctaid", dim) for dim in "xyz"]
                self._printf(text, [tid, *block, stage32, parity32])
                llvm.Trap()
            scf.YieldOp([tries])
