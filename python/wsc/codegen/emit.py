"""Small builders for the arith / scf / llvm / nvvm ops the lowering emits.

Every function creates ops at the current `ir.InsertionPoint` and
`ir.Location` (use `with ir.InsertionPoint(...), location:`), like the
generated op builders it wraps. Integer arithmetic on indices stays in arith
(so it folds and later lowers with the rest of the kernel); pointers and
memory accesses are llvm ops; Hopper instructions are nvvm ops or, where NVVM
has no op of the needed form, llvm.inline_asm.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from mlir import ir
from mlir.dialects import arith, llvm, nvvm, scf

from wsc.target.hopper import E4M3, wgmma_k

#: rawConstantIndices marker of a dynamic GEP index (LLVM::GEPOp::kDynamicIndex).
_GEP_DYNAMIC = -2147483648


# Types ----------------------------------------------------------------------


def i1() -> ir.Type:
    return ir.IntegerType.get_signless(1)


def i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def index() -> ir.Type:
    return ir.IndexType.get()


def ptr(space: int = 0) -> ir.Type:
    return ir.Type.parse("!llvm.ptr" if space == 0 else f"!llvm.ptr<{space}>")


def float_type(name: str) -> ir.Type:
    return {"f32": ir.F32Type.get, "f16": ir.F16Type.get, "bf16": ir.BF16Type.get}[name]()


def struct_of(element: ir.Type, count: int) -> ir.Type:
    return ir.Type.parse(f"!llvm.struct<({', '.join([str(element)] * count)})>")


def array_of(element: ir.Type, count: int) -> ir.Type:
    return ir.Type.parse(f"!llvm.array<{count} x {element}>")


# Integers -------------------------------------------------------------------


def const(value: int, type_: ir.Type | None = None) -> ir.Value:
    """An arith.constant (index unless `type_` says otherwise)."""
    type_ = type_ or index()
    if isinstance(type_, ir.IntegerType) and type_.width == 1:
        return arith.ConstantOp(type_, ir.BoolAttr.get(bool(value))).result
    return arith.ConstantOp(type_, value).result


def addi(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.addi(a, b)


def subi(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.subi(a, b)


def muli(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.muli(a, b)


def remui(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.remui(a, b)


def andi(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.andi(a, b)


def ori(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.ori(a, b)


def xori(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.xori(a, b)


def shrui(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.shrui(a, b)


def select(c: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.select(c, a, b)


_PREDICATES = {
    "eq": 0,
    "ne": 1,
    "slt": 2,
    "sle": 3,
    "sgt": 4,
    "sge": 5,
    "ult": 6,
    "ule": 7,
    "ugt": 8,
    "uge": 9,
}


def cmpi(predicate: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.cmpi(_PREDICATES[predicate], a, b)


def index_cast(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.index_cast(type_, value)


def index_castui(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.index_castui(type_, value)


def extui(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.extui(type_, value)


def arith_extsi(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.extsi(type_, value)


def _fastmath(contract: bool) -> dict:
    """arith's fastmath attribute: with `contract`, a product and the sum it
    feeds may become one fma (register-tile math); without, PTX's mul.rn and
    add.rn keep each rounding."""
    return {"fastmath": ir.Attribute.parse("#arith.fastmath<contract>")} if contract else {}


def addf(a: ir.Value, b: ir.Value, contract: bool = False) -> ir.Value:
    return arith.addf(a, b, **_fastmath(contract))


def subf(a: ir.Value, b: ir.Value, contract: bool = False) -> ir.Value:
    return arith.subf(a, b, **_fastmath(contract))


def mulf(a: ir.Value, b: ir.Value, contract: bool = False) -> ir.Value:
    return arith.mulf(a, b, **_fastmath(contract))


def divf(a: ir.Value, b: ir.Value) -> ir.Value:
    """a / b rounded as IEEE division rounds (div.rn.f32)."""
    return arith.divf(a, b)


def absf(a: ir.Value) -> ir.Value:
    return llvm.intr_fabs(a)


def maximumf(a: ir.Value, b: ir.Value) -> ir.Value:
    """max(a, b), NaN where either is NaN: in f32 one max.NaN.f32, which
    LLVM's NVPTX backend would expand into two compares and two selects."""
    if a.type == float_type("f32"):
        return approx("max.NaN.f32", a, b)
    return arith.maximumf(a, b)


def minimumf(a: ir.Value, b: ir.Value) -> ir.Value:
    """min(a, b), NaN where either is NaN (in f32 one min.NaN.f32)."""
    if a.type == float_type("f32"):
        return approx("min.NaN.f32", a, b)
    return arith.minimumf(a, b)


def negf(a: ir.Value) -> ir.Value:
    return arith.negf(a)


def float_const(value: float) -> ir.Value:
    """An f32 constant."""
    f32 = float_type("f32")
    return arith.ConstantOp(f32, ir.FloatAttr.get(f32, value)).result


def exp2_approx(x: ir.Value) -> ir.Value:
    """2^x by ex2.approx.ftz.f32 (relative error at most 2^-22; a result
    below 2^-126 is 0): one MUFU.EX2, where the non-ftz form adds a compare
    and two multiplies to scale subnormal results."""
    return approx("ex2.approx.ftz.f32", x)


def approx(instruction: str, *operands: ir.Value) -> ir.Value:
    """An f32 PTX instruction of f32 operands, e.g. "tanh.approx.f32": a pure
    function of them, which LLVM may move, merge or drop like any arithmetic."""
    f32 = float_type("f32")
    registers = ", ".join(f"${index + 1}" for index in range(len(operands)))
    constraints = ",".join(["=f", *["f"] * len(operands)])
    return llvm.InlineAsmOp(
        f32, list(operands), f"{instruction} $0, {registers};", constraints
    ).result


def cmpf_olt(a: ir.Value, b: ir.Value) -> ir.Value:
    """a < b, false where either is NaN."""
    return cmpf("olt", a, b)


def cmpf(predicate: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """arith.cmpf with `predicate` named as arith spells it ("olt", "une", ...)."""
    return arith.cmpf(getattr(arith.CmpFPredicate, predicate.upper()), a, b)


def sitofp(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.sitofp(type_, value)


def truncf(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.truncf(type_, value)


def extf(value: ir.Value, type_: ir.Type) -> ir.Value:
    return arith.extf(type_, value)


# Pointers and memory --------------------------------------------------------


def gep(
    base: ir.Value,
    indices: Sequence[int | ir.Value],
    element: ir.Type,
    result_type: ir.Type | None = None,
) -> ir.Value:
    """llvm.getelementptr base[indices...] over `element`."""
    raw, dynamic = [], []
    for item in indices:
        if isinstance(item, int):
            raw.append(item)
        else:
            raw.append(_GEP_DYNAMIC)
            dynamic.append(item)
    return llvm.GEPOp(
        result_type or base.type,
        base,
        dynamic,
        ir.DenseI32ArrayAttr.get(raw),
        ir.TypeAttr.get(element),
        ir.IntegerAttr.get(i32(), 0),
    ).result


def ptrtoint(value: ir.Value, type_: ir.Type) -> ir.Value:
    return llvm.PtrToIntOp(type_, value).result


def addrspacecast(value: ir.Value, space: int) -> ir.Value:
    return llvm.AddrSpaceCastOp(ptr(space), value).result


def alloca(element: ir.Type, alignment: int = 16) -> ir.Value:
    one = llvm.ConstantOp(i32(), ir.IntegerAttr.get(i32(), 1)).result
    return llvm.AllocaOp(ptr(), one, ir.TypeAttr.get(element), alignment=alignment).result


def load(
    type_: ir.Type, address: ir.Value, alignment: int | None = None, volatile: bool = False
) -> ir.Value:
    return llvm.LoadOp(type_, address, alignment=alignment, volatile_=volatile).result


def store(value: ir.Value, address: ir.Value, alignment: int | None = None) -> None:
    llvm.StoreOp(value, address, alignment=alignment)


def zero(type_: ir.Type) -> ir.Value:
    return llvm.ZeroOp(type_).result


def undef(type_: ir.Type) -> ir.Value:
    return llvm.UndefOp(type_).result


def extractvalue(container: ir.Value, position: int, type_: ir.Type) -> ir.Value:
    return llvm.ExtractValueOp(type_, container, ir.DenseI64ArrayAttr.get([position])).result


def insertvalue(container: ir.Value, value: ir.Value, position: int) -> ir.Value:
    return llvm.InsertValueOp(container, value, ir.DenseI64ArrayAttr.get([position])).result


def extractelement(vector: ir.Value, position: int) -> ir.Value:
    pos = llvm.ConstantOp(i32(), ir.IntegerAttr.get(i32(), position)).result
    return llvm.ExtractElementOp(vector, pos).result


def insertelement(vector: ir.Value, value: ir.Value, position: int) -> ir.Value:
    pos = llvm.ConstantOp(i32(), ir.IntegerAttr.get(i32(), position)).result
    return llvm.InsertElementOp(vector, value, pos).result


def inline_asm(
    asm: str, constraints: str, operands: Sequence[ir.Value], result: ir.Type | None = None
) -> ir.Value | None:
    """llvm.inline_asm with side effects (never hoisted, merged or dropped)."""
    op = llvm.InlineAsmOp(result, list(operands), asm, constraints, has_side_effects=True)
    return op.result if result is not None else None


# Structured control flow ----------------------------------------------------


def if_then(condition: ir.Value) -> scf.IfOp:
    """An scf.if without results or else; build its body with `then_body(if_op)`."""
    op = scf.IfOp(condition, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        scf.YieldOp([])
    return op


def scf_if_else(condition: ir.Value) -> scf.IfOp:
    """An scf.if with an else block and no results."""
    op = scf.IfOp(condition, [], has_else=True)
    for block in (op.then_block, op.else_block):
        with ir.InsertionPoint(block):
            scf.YieldOp([])
    return op


def then_body(if_op: scf.IfOp) -> ir.InsertionPoint:
    """Insertion point before the then-block's yield."""
    return ir.InsertionPoint.at_block_terminator(if_op.then_block)


def spin_until(build_condition) -> None:
    """scf.while that re-evaluates build_condition() (an i1, true = done) until true."""
    loop = scf.WhileOp([], [])
    before = ir.Block.create_at_start(loop.before, [])
    after = ir.Block.create_at_start(loop.after, [])
    with ir.InsertionPoint(before):
        done = build_condition()
        again = xori(done, const(1, i1()))
        scf.ConditionOp(again, [])
    with ir.InsertionPoint(after):
        scf.YieldOp([])


# NVVM -------------------------------------------------------------------------


def thread_id_x() -> ir.Value:
    return nvvm.read_ptx_sreg_tid_x(i32())


def special_register(name: str, dim: str) -> ir.Value:
    """ctaid / nctaid / ntid / tid along x, y or z, as i32."""
    return getattr(nvvm, f"read_ptx_sreg_{name}_{dim}")(i32())


def barrier(barrier_id: int = 0, threads: int | None = None) -> None:
    """bar.sync id[, threads]: id 0 without a count is the whole block."""
    if threads is None:
        if barrier_id:
            raise ValueError(f"named barrier {barrier_id} needs its thread count")
        nvvm.BarrierOp(None)
    else:
        nvvm.BarrierOp(
            None, barrierId=const(barrier_id, i32()), numberOfThreads=const(threads, i32())
        )


def shuffle_xor(value: ir.Value, lane_mask: int) -> ir.Value:
    """The f32 `value` of the lane whose index is this one's xor `lane_mask`
    (shfl.sync.bfly over the whole warp)."""
    return nvvm.ShflOp(
        value.type,
        const(-1, i32()),
        value,
        const(lane_mask, i32()),
        const(31, i32()),
        nvvm.ShflKind.bfly,
    ).result


def warp_sync() -> None:
    """bar.warp.sync of the whole warp: its threads' earlier memory accesses
    are ordered before what any of them does next."""
    nvvm.SyncWarpOp(const(-1, i32()))


def set_max_registers(count: int, increase: bool) -> None:
    nvvm.SetMaxRegisterOp(count, "increase" if increase else "decrease")


def mbarrier_init(address: ir.Value, count: int) -> None:
    nvvm.MBarrierInitOp(address, const(count, i32()))


def fence_mbarrier_init() -> None:
    nvvm.FenceMbarrierInitOp()


def mbarrier_arrive(address: ir.Value) -> None:
    nvvm.MBarrierArriveOp(None, address)


def mbarrier_arrive_expect_tx(address: ir.Value, tx_bytes: int) -> None:
    nvvm.MBarrierArriveExpectTxOp(None, address, const(tx_bytes, i32()))


#: One non-blocking probe of an mbarrier phase: $0 = 1 once the phase with
#: parity $2 of the barrier at shared address $1 has completed.
TRY_WAIT_PARITY_ASM = (
    "{\n\t.reg .pred p;\n\t"
    "mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n\t"
    "selp.u32 $0, 1, 0, p;\n\t}"
)


def mbarrier_wait_parity(address32: ir.Value, parity32: ir.Value) -> None:
    """Spin on mbarrier.try_wait.parity until the phase of that parity completes.

    The loop is an ordinary (divergence-safe) branch around a probe, not the
    `bra.uni` loop that NVVM's own try_wait.parity op expands to."""

    def probe() -> ir.Value:
        ready = inline_asm(TRY_WAIT_PARITY_ASM, "=r,r,r", [address32, parity32], i32())
        return cmpi("ne", ready, const(0, i32()))

    spin_until(probe)


def tma_load(
    dst: ir.Value,
    tensor_map: ir.Value,
    coords: Sequence[ir.Value],
    barrier_address: ir.Value,
    multicast_mask: ir.Value | None = None,
) -> None:
    """cp.async.bulk.tensor.<n>d.shared::cluster.global.mbarrier::complete_tx::bytes,
    n = len(coords); coords innermost first, dst a shared::cluster (address
    space 7) pointer.
    With `multicast_mask` (i16) the copy lands at dst's offset in every CTA of
    the mask, completing on the barrier at the same offset in each."""
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
        dst, tensor_map, list(coords), barrier_address, [], multicastMask=multicast_mask
    )


def cluster_rank() -> ir.Value:
    """%cluster_ctarank: this CTA's rank in its cluster, as i32."""
    return nvvm.read_ptx_sreg_cluster_ctarank(i32())


def cluster_sync() -> None:
    """barrier.cluster.arrive.aligned then barrier.cluster.wait.aligned: every
    thread of every CTA of the cluster (release/acquire by default)."""
    nvvm.ClusterArriveOp(aligned=True)
    nvvm.ClusterWaitOp(aligned=True)


def mbarrier_arrive_remote(address: ir.Value, rank: ir.Value) -> None:
    """mbarrier.arrive.shared::cluster on the barrier at the shared-memory
    offset of `address` in the CTA of rank `rank` (mapa). Release at CTA
    scope, as for a local arrive: what it orders are this thread's reads of
    its own CTA's stage, which the other CTA's TMA then overwrites."""
    remote = nvvm.MapaOp(ptr(7), address, rank).result
    nvvm.MBarrierArriveOp(None, remote)


def tma_store(src: ir.Value, tensor_map: ir.Value, coords: Sequence[ir.Value]) -> None:
    """cp.async.bulk.tensor.<n>d.global.shared::cta.bulk_group, n = len(coords);
    coords innermost first, src a shared (address space 3) pointer."""
    nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(tensor_map, src, list(coords))


def bulk_commit_group() -> None:
    """cp.async.bulk.commit_group: the thread's uncommitted TMA stores become one group."""
    nvvm.CpAsyncBulkCommitGroupOp()


def bulk_wait_group_read(pending: int) -> None:
    """cp.async.bulk.wait_group.read: at most `pending` of the thread's groups
    still read their shared-memory source."""
    nvvm.CpAsyncBulkWaitGroupOp(pending, read=True)


def fence_proxy_async_shared() -> None:
    """fence.proxy.async.shared::cta: this thread's generic-proxy writes to
    shared memory become visible to the async proxy (TMA)."""
    nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)


def wgmma_fence() -> None:
    nvvm.WgmmaFenceAlignedOp()


def wgmma_commit_group() -> None:
    nvvm.WgmmaGroupSyncAlignedOp()


def wgmma_wait_group(pending: int) -> None:
    nvvm.WgmmaWaitGroupSyncOp(pending)


def register_fence(value: ir.Value, element: ir.Type, count: int) -> ir.Value:
    """`value`, a struct of `count` `element` registers (f32, or f16x2
    vectors), passed through an empty asm that ties every field: it emits no
    instruction, but no read of the result can move above the side effect
    just before it (a wait)."""
    fields = [extractvalue(value, i, element) for i in range(count)]
    if str(element) == "f32":
        constraints = ",".join(["=f"] * count + [str(i) for i in range(count)])
        return inline_asm("", constraints, fields, value.type)
    # An f16x2 pair is one 32-bit register: tie it as its bits.
    bits = [llvm.BitcastOp(i32(), field).result for field in fields]
    constraints = ",".join(["=r"] * count + [str(i) for i in range(count)])
    tied = inline_asm("", constraints, bits, struct_of(i32(), count))
    result = undef(value.type)
    for i in range(count):
        pair = llvm.BitcastOp(element, extractvalue(tied, i, i32())).result
        result = insertvalue(result, pair, i)
    return result


def opaque(value: ir.Value) -> ir.Value:
    """The i32 `value` through an empty asm tied to it: no instruction, but
    LLVM cannot hoist what is computed from it out of the loop it is in."""
    return inline_asm("", "=r,0", [value], i32())


_WGMMA_TYPES = {"f16": "f16", "bf16": "bf16", E4M3: "e4m3", "f32": "f32"}


def wgmma_mma_async(
    accumulator: ir.Value,
    desc_a: ir.Value,
    desc_b: ir.Value,
    n: int,
    input_type: str,
    a_k_major: bool,
    b_k_major: bool,
    output_type: str = "f32",
    accumulate: bool = True,
) -> ir.Value:
    """D += A * B for one m64nNk16 (m64nNk32 for fp8); A K-major or M-major, B
    K-major or N-major (fp8: both K-major). D is a struct of N/2 f32, or
    (output_type f16) of N/4 vector<2xf16>. Without `accumulate`, D = A * B
    (scale-d = 0): the WGMMA does not read D's input."""
    shape = ir.Attribute.parse(f"#nvvm.shape<m = 64, n = {n}, k = {wgmma_k(input_type)}>")
    in_type = getattr(nvvm.WGMMATypes, _WGMMA_TYPES[input_type])
    return nvvm.WgmmaMmaAsyncOp(
        accumulator.type,
        accumulator,
        desc_a,
        desc_b,
        shape,
        in_type,
        in_type,
        getattr(nvvm.WGMMATypes, _WGMMA_TYPES[output_type]),
        nvvm.WGMMAScaleOut.one if accumulate else nvvm.WGMMAScaleOut.zero,
        nvvm.WGMMAScaleIn.one,
        nvvm.WGMMAScaleIn.one,
        nvvm.MMALayout.row if a_k_major else nvvm.MMALayout.col,
        nvvm.MMALayout.col if b_k_major else nvvm.MMALayout.row,
    ).result


def pack_pair(first: ir.Value, second: ir.Value) -> ir.Value:
    """Two 16-bit floats as one i32 register, `first` in the low half (the
    order of a WGMMA A fragment's element pairs)."""
    pair = undef(ir.VectorType.get([2], first.type))
    return pair_bits(insertelement(insertelement(pair, first, 0), second, 1))


def pair_bits(pair: ir.Value) -> ir.Value:
    """A vector of two 16-bit floats as the i32 register that holds it."""
    return llvm.BitcastOp(i32(), pair).result


def wgmma_register_a(
    accumulator: ir.Value,
    a_registers: Sequence[ir.Value],
    desc_b: ir.Value,
    n: int,
    input_type: str,
    b_k_major: bool,
    accumulate: bool = True,
) -> ir.Value:
    """D += A * B for one m64nNk16 with A's fragment in four i32 registers
    (element pairs, `pack_pair`) and B by descriptor, K-major or N-major; D
    is a struct of N/2 f32; without `accumulate`, D = A * B (scale-d = 0).
    The NVVM op takes A only by descriptor, so this is the PTX itself, D tied
    in and out."""
    count = n // 2
    f32 = float_type("f32")
    d = ", ".join(f"${i}" for i in range(count))
    a = ", ".join(f"${2 * count + q}" for q in range(4))
    text = (
        f"{{ .reg .pred p; setp.ne.b32 p, {int(accumulate)}, 0; "
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{input_type}.{input_type} "
        f"{{{d}}}, {{{a}}}, ${2 * count + 4}, p, 1, 1, {0 if b_k_major else 1}; }}"
    )
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)] + ["r"] * 4 + ["l"])
    values = [extractvalue(accumulator, i, f32) for i in range(count)]
    result = inline_asm(text, constraints, [*values, *a_registers, desc_b], accumulator.type)
    assert result is not None
    return result


# Split-K hand-off through global memory ----------------------------------------


def fence_acq_rel_gpu() -> None:
    """fence.acq_rel.gpu: this thread's earlier global writes are ordered
    before its later accesses for every thread of the GPU (and vice versa)."""
    inline_asm("fence.acq_rel.gpu;", "", [])


def global_address(base: ir.Value, offset: ir.Value, element: ir.Type) -> ir.Value:
    """The ptr<1> of base[offset] (offset an i64 count of `element`s)."""
    return gep(addrspacecast(base, 1), [offset], element, ptr(1))


def store_global_v4(values: Sequence[ir.Value], address: ir.Value) -> None:
    """Four f32 at a 16-byte aligned global address, in one vector store."""
    vector = undef(ir.VectorType.get([4], float_type("f32")))
    for lane, value in enumerate(values):
        vector = insertelement(vector, value, lane)
    store(vector, address, alignment=16)


#: ld.global.nc of one element by its width: the register class of the
#: inline asm and the PTX type.
_ELEMENT_LOADS = {2: ("h", "b16"), 4: ("f", "f32")}


def load_global_masked(
    address: ir.Value,
    offset: int,
    inside: ir.Value,
    element: str,
    read_only: bool,
    fill: float = 0.0,
) -> ir.Value:
    """The `element` at the global address + `offset` bytes (an immediate: one
    address register serves a row of loads), or `fill` where `inside` (i1) is
    false; the load is predicated off there, so the address may lie outside
    the tensor. Data the kernel never writes (`read_only`) is read through
    the non-coherent cache by an asm without side effects, so repeated reads
    of one element merge; other data in program order."""
    width = 4 if element == "f32" else 2
    constraint, ptx_type = _ELEMENT_LOADS[width]
    register = float_type("f32") if width == 4 else ir.IntegerType.get_signless(16)
    # A fill the 16-bit element cannot hold exactly is selected after widening.
    bits16 = None if width == 4 else _exact_bits16(fill, element)
    if width == 4:
        outside = f"0f{_f32_bits(fill):08X}"
    else:
        outside = f"0x{bits16:04X}" if bits16 else "0"
    cache = ".nc" if read_only else ""
    value = llvm.InlineAsmOp(
        register,
        [address, arith.extui(i32(), inside)],
        f"{{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.{ptx_type} $0, {outside}; "
        f"@p ld.global{cache}.{ptx_type} $0, [$1+{offset}]; }}",
        f"={constraint},l,r",
        has_side_effects=not read_only,
    ).result
    if width == 4:
        return value
    widened = arith.extf(float_type("f32"), arith.bitcast(float_type(element), value))
    if bits16 is not None:
        return widened
    return select(inside, widened, float_const(fill))


def _f32_bits(value: float) -> int:
    """The bits of `value` rounded to f32 (PTX writes f32 immediates as 0fXXXXXXXX)."""
    return int.from_bytes(struct.pack("<f", value), "little")


def _exact_bits16(value: float, element: str) -> int | None:
    """The bits of `value` as an f16 or bf16 `element`, where that holds it
    exactly once rounded to f32 (0, -0, infinities, small integers); else None.
    Any NaN is kept as a NaN."""
    bits = _f32_bits(value)
    if element == "bf16":  # bf16 is the top half of an f32
        return bits >> 16 if bits & 0xFFFF == 0 else None
    single = struct.unpack("<f", bits.to_bytes(4, "little"))[0]
    try:
        half = struct.pack("<e", single)
    except OverflowError:
        return None
    same = struct.unpack("<e", half)[0]
    if same == single or (same != same and single != single):
        return int.from_bytes(half, "little")
    return None


def load_global_v4_l2(address: ir.Value, offset: int = 0) -> list[ir.Value]:
    """Four f32 from the 16-byte aligned global address + `offset` bytes, read
    from L2 (ld.cg): another SM wrote them, and this SM's L1 is not coherent
    with it. The offset is an immediate: one base register serves many loads."""
    f32 = float_type("f32")
    quad = inline_asm(
        f"ld.global.cg.v4.f32 {{$0, $1, $2, $3}}, [$4+{offset}];",
        "=f,=f,=f,=f,l",
        [ptrtoint(address, i64())],
        struct_of(f32, 4),
    )
    assert quad is not None
    return [extractvalue(quad, lane, f32) for lane in range(4)]


def count_arrival(
    leader: ir.Value,
    counter: ir.Value,
    splits: int,
    barrier_id: int,
    threads: int | None,
) -> ir.Value:
    """One arrival on the global i32 `counter`, by the thread where `leader`
    holds (acq_rel at GPU scope), then a barrier of the executing threads that
    tells all of them (i1) whether it was the `splits`-th."""
    barrier_operands = f"{barrier_id}, {threads}" if threads is not None else "0"
    text = (
        "{ .reg .pred leader, last; .reg .u32 old; "
        "setp.ne.u32 leader, $1, 0; "
        "@leader atom.acq_rel.gpu.global.add.u32 old, [$2], 1; "
        f"setp.eq.and.u32 last, old, {splits - 1}, leader; "
        f"bar.red.or.pred last, {barrier_operands}, last; "
        "selp.u32 $0, 1, 0, last; }"
    )
    last = inline_asm(text, "=r,r,l", [extui(leader, i32()), ptrtoint(counter, i64())], i32())
    assert last is not None
    return cmpi("ne", last, const(0, i32()))
