// The wsc dialect, defined once, in IRDL, and loaded at run time by
// python/wsc/dialect.py. IRDL checks operand/result types and the presence and
// kind of attributes; what IRDL cannot express (value ranges, warpgroup
// alignment, thread ranges inside the block, tile rules) is checked by
// python/wsc/verifier.py, which every tool runs right after parsing.
//
// Conventions:
//  - Shared-memory ring buffers are builtin memrefs in address space 3 of
//    shape [num_stages, rows, cols]; global tensors are rank-2 memrefs, or
//    rank-3 batches of matrices read and written through wsc.batch_matrix
//    (and rank-1 vectors and workspaces).
//  - A stage is an `index` operand; a phase is an `i1` operand (the parity of
//    the mbarrier phase being waited for).
//  - Roles and elected single threads are i1 predicates guarding an scf.if,
//    because IRDL operations cannot declare a region terminator.
//
// Every constraint value below is used by exactly one operand, result or
// attribute: IRDL unifies all uses of one constraint value, so sharing one
// would force those types or attributes to be equal.
//
// Attributes: `irdl.attributes` declares the required ones, and IRDL has no
// optional attributes, so an op's optional attributes are declared in the
// `optional_attributes` dictionary of its irdl.operation, each with its
// base ("#builtin.unit", "#builtin.integer" or "#builtin.float", an f32);
// python/wsc/verifier.py
// checks them. python/wsc/ops.py reads every name from here. Kernels are
// func.funcs with the discardable attributes wsc.num_threads (threads per
// block, i32), launched in clusters wsc.cluster_size (CTAs per cluster along
// x, i32), and sharing each SM with more of their blocks wsc.blocks_per_sm
// (blocks an SM runs at once, i32).
irdl.dialect @wsc {

  // An array of mbarriers in shared memory (their count and arrival count
  // live on the wsc.mbarrier_alloc that defines the value).
  irdl.type @mbarriers {
  }

  // A register tile distributed over the threads of one warpgroup, e.g.
  // !wsc.acc<array<i64: 128, 128>, f32>; one of one column, e.g.
  // !wsc.acc<array<i64: 128, 1>, f32>, is a row vector (a value per row) for
  // register math.
  irdl.type @acc {
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    irdl.parameters(shape: %shape, element: %element)
  }

  // %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32,
  //                              num_threads = 32 : i32} : () -> i1
  // True in the threads [thread_begin, thread_begin + num_threads) of the
  // block; guards the scf.if that holds the role's code. An optional
  // `max_registers` attribute is the role's setmaxnreg budget.
  irdl.operation @role attributes {
      optional_attributes = {max_registers = "#builtin.integer"}} {
    %role = irdl.base "#builtin.string"
    %begin = irdl.base "#builtin.integer"
    %count = irdl.base "#builtin.integer"
    irdl.attributes { "role" = %role, "thread_begin" = %begin, "num_threads" = %count }
    %pred = irdl.is i1
    irdl.results(is_member: %pred)
  }

  // %elected = "wsc.elect"() : () -> i1
  // True in exactly one thread of the enclosing role (of the block outside roles).
  irdl.operation @elect {
    %pred = irdl.is i1
    irdl.results(is_elected: %pred)
  }

  // %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  // A ring buffer in shared memory: num_stages x rows x cols.
  irdl.operation @alloc_shared {
    %buffer = irdl.base "!builtin.memref"
    irdl.results(buffer: %buffer)
  }

  // %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32}
  //           : () -> !wsc.mbarriers
  // num_barriers mbarriers, each completing a phase after arrival_count arrivals
  // (and all expected transaction bytes). Initialised by one thread; visible to
  // the others only after the next block-wide wsc.sync.
  irdl.operation @mbarrier_alloc {
    %arrivals = irdl.base "#builtin.integer"
    %size = irdl.base "#builtin.integer"
    irdl.attributes { "arrival_count" = %arrivals, "num_barriers" = %size }
    %bars = irdl.base @wsc::@mbarriers
    irdl.results(barriers: %bars)
  }

  // "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
  // Every executing thread arrives once on barriers[stage]. With the unit
  // attribute `per_warp`, each executing warp arrives once instead, from its
  // first lane after the warp's threads synchronize (their earlier accesses
  // are ordered before the arrival); not under a condition that can split a
  // warp (one computed from wsc.elect or the thread id). With the unit
  // attribute `every_cta` (kernel attribute wsc.cluster_size = n), each
  // arrival reaches barriers[stage] of every CTA of the cluster, this one
  // included: the release of a stage that other CTAs' copies write.
  irdl.operation @mbarrier_arrive attributes {
      optional_attributes = {every_cta = "#builtin.unit", per_warp = "#builtin.unit"}} {
    %bars = irdl.base @wsc::@mbarriers
    %stage = irdl.is index
    irdl.operands(barriers: %bars, stage: %stage)
  }

  // "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32}
  // Arrives once and adds tx_bytes to the bytes barriers[stage] waits for.
  // Issued by one thread: under an scf.if on a wsc.elect of its role.
  irdl.operation @mbarrier_arrive_expect_tx {
    %bars = irdl.base @wsc::@mbarriers
    %stage = irdl.is index
    irdl.operands(barriers: %bars, stage: %stage)
    %bytes = irdl.base "#builtin.integer"
    irdl.attributes { "tx_bytes" = %bytes }
  }

  // "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
  // Blocks until the phase of barriers[stage] with parity %phase has completed.
  irdl.operation @mbarrier_wait {
    %bars = irdl.base @wsc::@mbarriers
    %stage = irdl.is index
    %phase = irdl.is i1
    irdl.operands(barriers: %bars, stage: %stage, phase: %phase)
  }

  // %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32}
  // The next slot of a ring of num_stages: stage + 1, wrapping to 0 with the
  // phase flipped.
  irdl.operation @ring_advance {
    %stage = irdl.is index
    %phase = irdl.is i1
    irdl.operands(stage: %stage, phase: %phase)
    %stages = irdl.base "#builtin.integer"
    irdl.attributes { "num_stages" = %stages }
    %next_stage = irdl.is index
    %next_phase = irdl.is i1
    irdl.results(next_stage: %next_stage, next_phase: %next_phase)
  }

  // "wsc.tma_load"(%a, %row, %col, %sa, %stage, %full)
  // One TMA copy of the tile src[row:row+R, col:col+C] into dst[stage]
  // (R x C = dst's trailing dims; out-of-bounds elements are zero-filled),
  // completing its R*C*sizeof(T) bytes on barriers[stage]. Issued by one
  // thread: under an scf.if on a wsc.elect of its role.
  // With the unit attribute `multicast` the tile is shared by every CTA of
  // the cluster (kernel attribute wsc.cluster_size = n): the CTA of rank r
  // copies rows [r*R/n, (r+1)*R/n) of it, from global rows row + r*R/n, into
  // those rows of dst[stage] in every CTA of the cluster, each copy
  // completing its bytes on that CTA's barriers[stage]. So every CTA's
  // barrier receives the whole tile's bytes, from n copies.
  irdl.operation @tma_load attributes {
      optional_attributes = {multicast = "#builtin.unit"}} {
    %src = irdl.base "!builtin.memref"
    %row = irdl.is index
    %col = irdl.is index
    %dst = irdl.base "!builtin.memref"
    %stage = irdl.is index
    %bars = irdl.base @wsc::@mbarriers
    irdl.operands(src: %src, row: %row, col: %col, dst: %dst, stage: %stage, barriers: %bars)
  }

  // %ab = "wsc.batch_matrix"(%a, %b)
  //         : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
  // Matrix b of a batch of matrices (a rank-3 global tensor [B, R, C]): a
  // rank-2 global tensor [R, C] that every op reading or writing a matrix
  // takes. Its rows and columns are bounded by R and C (a TMA copy
  // zero-fills past them, never reading matrix b + 1); b must be in [0, B).
  irdl.operation @batch_matrix {
    %batch = irdl.base "!builtin.memref"
    %index = irdl.is index
    irdl.operands(batch: %batch, index: %index)
    %matrix = irdl.base "!builtin.memref"
    irdl.results(matrix: %matrix)
  }

  // %rank = "wsc.cluster_rank"() : () -> index
  // The executing CTA's rank in its cluster, 0 .. wsc.cluster_size - 1.
  irdl.operation @cluster_rank {
    %index = irdl.is index
    irdl.results(rank: %index)
  }

  // "wsc.cluster_sync"() : () -> ()
  // A barrier of every thread of every CTA of the cluster. After mbarrier
  // initialisation it makes the barriers visible to the other CTAs, whose
  // copies and arrivals reach them.
  irdl.operation @cluster_sync {
  }

  // "wsc.tma_store"(%sc, %stage, %c, %row, %col)
  // One TMA copy of src[stage] (shared) into dst[row:row+R, col:col+C]
  // (global), clipped at dst's bounds. Issued by one thread, as one bulk
  // group of that thread: it reads src[stage] asynchronously, until the
  // thread's wsc.tma_store_wait says it is done. The writes to src[stage]
  // before it must be made visible to TMA: wsc.fence_proxy_async in every
  // writing thread, then a wsc.sync of them.
  irdl.operation @tma_store {
    %src = irdl.base "!builtin.memref"
    %stage = irdl.is index
    %dst = irdl.base "!builtin.memref"
    %row = irdl.is index
    %col = irdl.is index
    irdl.operands(src: %src, stage: %stage, dst: %dst, row: %row, col: %col)
  }

  // "wsc.coalesced_store"(%sc, %stage, %c, %row, %col)
  // Copies src[stage] (shared) into dst[row:row+R, col:col+C] (global),
  // clipped at dst's bounds, with every executing thread storing single
  // elements: a warp stores 32 consecutive elements of one row at a time.
  // For C that TMA cannot store (rows not 16-byte multiples). The writes to
  // src[stage] before it must be made visible by a wsc.sync of the writers,
  // and src[stage] may be written again only after a wsc.sync that follows
  // it (the copy is synchronous: each thread's reads are done when it
  // returns, the other threads' are not).
  irdl.operation @coalesced_store {
    %src = irdl.base "!builtin.memref"
    %stage = irdl.is index
    %dst = irdl.base "!builtin.memref"
    %row = irdl.is index
    %col = irdl.is index
    irdl.operands(src: %src, stage: %stage, dst: %dst, row: %row, col: %col)
  }

  // "wsc.tma_store_wait"() {pending = 0 : i32}
  // Waits until at most `pending` of this thread's wsc.tma_stores still read
  // shared memory (their writes to global memory may still be in flight; the
  // kernel's end waits for those).
  irdl.operation @tma_store_wait {
    %pending = irdl.base "#builtin.integer"
    irdl.attributes { "pending" = %pending }
  }

  // "wsc.fence_proxy_async"() : () -> ()
  // Makes this thread's earlier writes to shared memory visible to later TMA
  // copies (the async proxy), e.g. a wsc.store_shared before a wsc.tma_store.
  irdl.operation @fence_proxy_async {
  }

  // %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  // A zero-filled register tile of the executing warpgroup(s); with the unit
  // attribute `uninitialized` its registers hold no value until a write (a
  // wsc.wgmma with `overwrite`, a wsc.tile_assign) sets them.
  irdl.operation @acc_alloc attributes {optional_attributes = {uninitialized = "#builtin.unit"}} {
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %tile = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(tile: %tile)
  }

  // "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"}
  // acc += sa[stage][a_row : a_row + M, :] * op(sb[stage]) where M x N is acc's
  // shape; op(B) = B^T when B's stage tile is [N, K] ("nk"), B when it is
  // [K, N] ("kn"). With the unit attribute `a_transposed` A's stage tile is
  // [K, M] (read M-major) and the product takes its columns a_row : a_row + M,
  // transposed. With the integer attribute `a_stage` A is read from that
  // stage of its buffer, not from `stage` (A loaded once, outside the ring B
  // streams through). With the unit attribute `overwrite` the product replaces
  // acc (acc = sa * op(sb)). The accumulator is f32, or f16 for f16 operands.
  // Asynchronous: joins the open WGMMA group.
  irdl.operation @wgmma attributes {
      optional_attributes = {a_transposed = "#builtin.unit", a_stage = "#builtin.integer",
                             overwrite = "#builtin.unit"}} {
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %stage = irdl.is index
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %acc = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.operands(a: %a, b: %b, stage: %stage, acc: %acc)
    %a_row = irdl.base "#builtin.integer"
    %nk = irdl.is "nk"
    %kn = irdl.is "kn"
    %b_layout = irdl.any_of(%nk, %kn)
    irdl.attributes { "a_row" = %a_row, "b_layout" = %b_layout }
  }

  // "wsc.wgmma_register_a"(%a, %sb, %stage, %acc) {b_layout = "nk"}
  //   : (!wsc.acc<array<i64: 64, 64>, f16>, memref<2x64x64xf16, 3>, index,
  //      !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  // acc += a * op(sb[stage]) with A an M x K register tile of f16 or bf16 in
  // the accumulator's fragment layout (e.g. a wsc.cast of an accumulator),
  // read from registers: its columns [16k, 16k + 16) are the A fragment of
  // the k-th m64nNk16 step. op(B) as for wsc.wgmma; the accumulator is f32.
  // Asynchronous: joins the open WGMMA group, and A's registers must not
  // change until the group is waited for.
  irdl.operation @wgmma_register_a {
    %a_shape = irdl.base "#builtin.dense_array"
    %a_element = irdl.any
    %a = irdl.parametric @wsc::@acc<%a_shape, %a_element>
    %b = irdl.base "!builtin.memref"
    %stage = irdl.is index
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %acc = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.operands(a: %a, b: %b, stage: %stage, acc: %acc)
    %nk = irdl.is "nk"
    %kn = irdl.is "kn"
    %b_layout = irdl.any_of(%nk, %kn)
    irdl.attributes { "b_layout" = %b_layout }
  }

  // Orders register accesses before the following WGMMAs (wgmma_fence).
  irdl.operation @wgmma_fence {
  }

  // Closes the open group of WGMMAs (wgmma_commit_group).
  irdl.operation @wgmma_commit_group {
  }

  // Waits until at most `pending` committed WGMMA groups are in flight.
  irdl.operation @wgmma_wait_group {
    %pending = irdl.base "#builtin.integer"
    irdl.attributes { "pending" = %pending }
  }

  // "wsc.sync"() : () -> ()
  // A barrier of every thread of the block, or of the enclosing role.
  irdl.operation @sync {
  }

  // %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>)
  //                          -> !wsc.acc<array<i64: 128, 128>, f16>
  // Converts each element of a register tile (round to nearest even).
  irdl.operation @cast {
    %src_shape = irdl.base "#builtin.dense_array"
    %src_element = irdl.any
    %src = irdl.parametric @wsc::@acc<%src_shape, %src_element>
    irdl.operands(src: %src)
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %sum = "wsc.tile_binary"(%x, %y) {kind = "add"}
  //   : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>)
  //   -> !wsc.acc<array<i64: 64, 128>, f32>
  // Element by element, x <kind> y of two f32 register tiles of one shape:
  // add, sub, mul, div (rounded as IEEE division), max or min (max and min
  // return NaN where either is NaN; python/wsc/ops.py's TILE_BINARY_KINDS,
  // checked by the verifier).
  // The tiles share a fragment layout, so each thread combines its own
  // registers. A row vector [M, 1] beside an [M, N] tile is read broadcast
  // along the rows (its thread holds the rows of its tile registers); the
  // result is of the wider type.
  irdl.operation @tile_binary {
    %x_shape = irdl.base "#builtin.dense_array"
    %x_element = irdl.any
    %x = irdl.parametric @wsc::@acc<%x_shape, %x_element>
    %y_shape = irdl.base "#builtin.dense_array"
    %y_element = irdl.any
    %y = irdl.parametric @wsc::@acc<%y_shape, %y_element>
    irdl.operands(x: %x, y: %y)
    %kind = irdl.base "#builtin.string"
    irdl.attributes { "kind" = %kind }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %r = "wsc.tile_select"(%lhs, %rhs, %on_true, %on_false) {predicate = "lt"}
  //   : (!wsc.acc<array<i64: 64, 128>, f32>, ... x4) -> !wsc.acc<array<i64: 64, 128>, f32>
  // Element by element, on_true where lhs <predicate> rhs and on_false
  // elsewhere, of four f32 register tiles of one shape or its row vectors,
  // broadcast as for wsc.tile_binary (TILE_PREDICATES: lt,
  // le, gt, ge and eq are false where either side is NaN, ne is true there,
  // as torch compares). With wsc.tile_iota, a causal mask.
  irdl.operation @tile_select {
    %lhs_shape = irdl.base "#builtin.dense_array"
    %lhs_element = irdl.any
    %lhs = irdl.parametric @wsc::@acc<%lhs_shape, %lhs_element>
    %rhs_shape = irdl.base "#builtin.dense_array"
    %rhs_element = irdl.any
    %rhs = irdl.parametric @wsc::@acc<%rhs_shape, %rhs_element>
    %true_shape = irdl.base "#builtin.dense_array"
    %true_element = irdl.any
    %on_true = irdl.parametric @wsc::@acc<%true_shape, %true_element>
    %false_shape = irdl.base "#builtin.dense_array"
    %false_element = irdl.any
    %on_false = irdl.parametric @wsc::@acc<%false_shape, %false_element>
    irdl.operands(lhs: %lhs, rhs: %rhs, on_true: %on_true, on_false: %on_false)
    %predicate = irdl.base "#builtin.string"
    irdl.attributes { "predicate" = %predicate }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %rows = "wsc.tile_iota"(%origin) {along = "rows"}
  //   : (index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // Each element is its row index (along = "rows") or column index
  // (along = "cols") in the matrix the tile is a block of: origin plus its
  // place in the tile, as an f32 (exact below 2^24).
  irdl.operation @tile_iota {
    %origin = irdl.is index
    irdl.operands(origin: %origin)
    %along = irdl.base "#builtin.string"
    irdl.attributes { "along" = %along }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %s = "wsc.tile_col_reduce"(%x) {kind = "sum", rows = 16 : i32}
  //   : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  // The max (or sum) down each column of the f32 tile x over each group of
  // `rows` consecutive rows (1, 2, 4, 8 or 16: rows that one warp holds, so
  // the reduction is the warp's shuffles; 32 or 64, of a row vector only:
  // rows of two or four warps, which then exchange their values through
  // shared memory between two syncs of the role), every row of a group
  // getting its group's value. With a row vector, a value per group of rows:
  // a row of a matrix spread over 16 rows of a tile reduces as the rows'
  // sums' sum.
  irdl.operation @tile_col_reduce {
    %x_shape = irdl.base "#builtin.dense_array"
    %x_element = irdl.any
    %x = irdl.parametric @wsc::@acc<%x_shape, %x_element>
    irdl.operands(x: %x)
    %kind = irdl.base "#builtin.string"
    %rows = irdl.base "#builtin.integer"
    irdl.attributes { "kind" = %kind, "rows" = %rows }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %y = "wsc.tile_unary"(%x) {kind = "exp2"}
  //   : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
  // Element by element, of an f32 register tile (TILE_UNARY_KINDS): exp2
  // (2^x, PTX's ex2.approx.ftz.f32), log2 (lg2.approx.f32), rsqrt
  // (rsqrt.approx.f32), tanh (tanh.approx.f32), erf (a polynomial, absolute
  // error below 1e-6), relu (max(x, 0)) or neg (-x).
  irdl.operation @tile_unary {
    %x_shape = irdl.base "#builtin.dense_array"
    %x_element = irdl.any
    %x = irdl.parametric @wsc::@acc<%x_shape, %x_element>
    irdl.operands(x: %x)
    %kind = irdl.base "#builtin.string"
    irdl.attributes { "kind" = %kind }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %m = "wsc.tile_row_reduce"(%x) {kind = "max"}
  //   : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  // The row vector of the max (or sum) of each row of the f32 tile x
  // (ROW_REDUCE_KINDS): a row's values, which one warp holds, combine in
  // each thread and then across the four lanes that share the row, and every
  // lane gets the same bits. An online softmax's running max and sum.
  irdl.operation @tile_row_reduce {
    %x_shape = irdl.base "#builtin.dense_array"
    %x_element = irdl.any
    %x = irdl.parametric @wsc::@acc<%x_shape, %x_element>
    irdl.operands(x: %x)
    %kind = irdl.base "#builtin.string"
    irdl.attributes { "kind" = %kind }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %r = "wsc.tile_load"(%src, %row, %col)
  //   : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // Reads src[row:row+M, col:col+N] (a rank-2 f16, bf16 or f32 global memref)
  // into an f32 register tile in the accumulator's fragment layout; elements
  // outside src read as `fill` (an f32 attribute, e.g. -inf before a row
  // max; 0 without it). With the unit attribute `transpose` the tile is
  // the transpose of src's N x M block at (row, col), as wsc.store {transpose}
  // writes it.
  irdl.operation @tile_load attributes {
      optional_attributes = {transpose = "#builtin.unit", fill = "#builtin.float"}} {
    %src = irdl.base "!builtin.memref"
    %row = irdl.is index
    %col = irdl.is index
    irdl.operands(src: %src, row: %row, col: %col)
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %bias = "wsc.tile_broadcast"(%src, %offset) {along = "cols"}
  //   : (memref<?xf16>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // An f32 register tile made of a vector: src[offset:offset+N] along each
  // row (along = "cols": element (i, j) is src[offset + j], e.g. a bias per
  // column of C) or src[offset:offset+M] down each column (along = "rows":
  // element (i, j) is src[offset + i]). src is a rank-1 f16, bf16 or f32
  // global memref; elements past its end read as 0.
  irdl.operation @tile_broadcast {
    %src = irdl.base "!builtin.memref"
    %offset = irdl.is index
    irdl.operands(src: %src, offset: %offset)
    %along = irdl.base "#builtin.string"
    irdl.attributes { "along" = %along }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // "wsc.tile_assign"(%dst, %src)
  //   : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
  // Sets every element of dst, a register tile of wsc.acc_alloc, to src's (of
  // its type): in place, as a WGMMA accumulates, so a tile allocated before a
  // loop carries values computed in it from trip to trip (a running max, a
  // rescaled accumulator).
  irdl.operation @tile_assign {
    %dst_shape = irdl.base "#builtin.dense_array"
    %dst_element = irdl.any
    %dst = irdl.parametric @wsc::@acc<%dst_shape, %dst_element>
    %src_shape = irdl.base "#builtin.dense_array"
    %src_element = irdl.any
    %src = irdl.parametric @wsc::@acc<%src_shape, %src_element>
    irdl.operands(dst: %dst, src: %src)
  }

  // %t = "wsc.tile_fill"() {value = 0.5 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // An f32 register tile with every element `value`.
  irdl.operation @tile_fill {
    %value = irdl.base "#builtin.float"
    irdl.attributes { "value" = %value }
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // %t = "wsc.tile_splat"(%alpha) : (f32) -> !wsc.acc<array<i64: 64, 128>, f32>
  // An f32 register tile with every element `value`, a scalar kernel argument
  // (its value set at each launch).
  irdl.operation @tile_splat {
    %value = irdl.is f32
    irdl.operands(value: %value)
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // "wsc.store_shared"(%acc, %sc, %stage)
  // Writes a register tile into dst[stage] (shared), whose element type must
  // be the register tile's, in the layout TMA and WGMMA use for that buffer:
  // the whole stage tile, or with the integer attributes `row` (a multiple
  // of 64) and `col` (of 8) the block of the tile's shape at (row, col).
  irdl.operation @store_shared attributes {
      optional_attributes = {row = "#builtin.integer", col = "#builtin.integer"}} {
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %tile = irdl.parametric @wsc::@acc<%shape, %element>
    %dst = irdl.base "!builtin.memref"
    %stage = irdl.is index
    irdl.operands(tile: %tile, dst: %dst, stage: %stage)
  }

  // %x = "wsc.load_shared"(%sx, %stage) {col = 128 : i32}
  //   : (memref<3x64x512xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // Reads src[stage] (shared, f16, bf16 or f32) into an f32 register tile in
  // the accumulator's fragment layout: the whole stage tile, or with the
  // integer attributes `row` (a multiple of 64) and `col` (of 8) the block
  // of the result's shape at (row, col). A synchronous read of the stage:
  // the inverse of wsc.store_shared. With the unit attribute `transpose` the
  // M x N result is the transpose of the stage's N x M block at (row, col),
  // element (i, j) = src[stage][row + j, col + i] (a multiple of 8 rows and
  // of 64 columns): e.g. a scale per row of the tile, which TMA copied into
  // one stage row with the tile's operands, read as a row vector [M, 1].
  irdl.operation @load_shared attributes {
      optional_attributes = {row = "#builtin.integer", col = "#builtin.integer",
                             transpose = "#builtin.unit"}} {
    %src = irdl.base "!builtin.memref"
    %stage = irdl.is index
    irdl.operands(src: %src, stage: %stage)
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %result = irdl.parametric @wsc::@acc<%shape, %element>
    irdl.results(result: %result)
  }

  // "wsc.store"(%acc, %c, %row, %col)
  // Stores a register tile to dst[row:row+M, col:col+N], clipped at dst's
  // bounds. The tile's element type must be dst's. With the unit attribute
  // `transpose` the M x N tile is the transpose of dst's N x M block at
  // (row, col): element (i, j) goes to dst[row + j, col + i] (a tile whose
  // WGMMA swapped the operands, C^T = B A^T, stored as C).
  irdl.operation @store attributes {
      optional_attributes = {transpose = "#builtin.unit"}} {
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %tile = irdl.parametric @wsc::@acc<%shape, %element>
    %dst = irdl.base "!builtin.memref"
    %row = irdl.is index
    %col = irdl.is index
    irdl.operands(tile: %tile, dst: %dst, row: %row, col: %col)
  }

  // Split-K: several blocks each sum a share of K for the same output rows
  // and hand their partial sums over through global memory. `partials` is a
  // rank-1 f32 memref, `counters` a rank-1 i32 memref that is all zero when
  // the kernel starts; the partial sums of rows [row, row + R) of the output
  // (R x C the register tile's shape, row a multiple of R) take the `splits`
  // blocks of R * C elements from partials[row * splits * C], split s the
  // s-th, and counters[row] counts the splits that have published theirs.

  // "wsc.partial_store"(%acc, %partials, %row, %split) {splits = 4 : i32}
  // Writes the f32 register tile as split `split`'s partial sum of rows
  // [row, row + R), in register-fragment order: only a wsc.partial_reduce of
  // the same tile shape reads it back.
  irdl.operation @partial_store {
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %tile = irdl.parametric @wsc::@acc<%shape, %element>
    %partials = irdl.base "!builtin.memref"
    %row = irdl.is index
    %split = irdl.is index
    irdl.operands(tile: %tile, partials: %partials, row: %row, split: %split)
    %splits = irdl.base "#builtin.integer"
    irdl.attributes { "splits" = %splits }
  }

  // %last = "wsc.partial_arrive"(%counters, %row) {splits = 4 : i32}
  //           : (memref<?xi32>, index) -> i1
  // Publishes the executing threads' earlier wsc.partial_stores to the whole
  // GPU, then counts this split's arrival on counters[row]. True in every
  // executing thread when it was the `splits`-th arrival: every split's
  // partial sum of the rows is then visible to them.
  irdl.operation @partial_arrive {
    %counters = irdl.base "!builtin.memref"
    %row = irdl.is index
    irdl.operands(counters: %counters, row: %row)
    %splits = irdl.base "#builtin.integer"
    irdl.attributes { "splits" = %splits }
    %last = irdl.is i1
    irdl.results(last: %last)
  }

  // "wsc.partial_reduce"(%acc, %partials, %counters, %row) {splits = 4 : i32}
  // Sets the f32 register tile to the sum of the `splits` partial sums of rows
  // [row, row + R), added in split order 0, 1, ..., so the result does not
  // depend on which split arrived last, and sets counters[row] back to zero
  // for the next launch. Only where the wsc.partial_arrive of these rows
  // returned true.
  irdl.operation @partial_reduce {
    %shape = irdl.base "#builtin.dense_array"
    %element = irdl.any
    %tile = irdl.parametric @wsc::@acc<%shape, %element>
    %partials = irdl.base "!builtin.memref"
    %counters = irdl.base "!builtin.memref"
    %row = irdl.is index
    irdl.operands(tile: %tile, partials: %partials, counters: %counters, row: %row)
    %splits = irdl.base "#builtin.integer"
    irdl.attributes { "splits" = %splits }
  }
}
