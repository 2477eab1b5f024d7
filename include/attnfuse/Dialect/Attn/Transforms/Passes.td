//===- Passes.td - attn dialect passes ---------------------*- tablegen -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_TD
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnDecompose : Pass<"attn-decompose"> {
  let summary = "Decompose attn layer ops into primitive attn ops";
  let description = [{
    Rewrites `attn.qkv_attention` and `attn.cca` into `attn.project`,
    `attn.causal_conv1d`, `attn.qk_mean`, `attn.qk_norm`,
    `attn.value_shift`, `attn.rope` and `attn.sdpa`, with `tensor` ops to
    split heads, concatenate and slice channels. Projections shared by the
    sharing mode are computed once: for `kv` the single key projection feeds
    both the (rotated) key and the (un-rotated) value of `attn.sdpa`. An
    `attn.cca` with a padding mask projects `attn.mask_tokens` of its input
    and passes the mask to `attn.sdpa` as its key mask.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnDifferentiate : Pass<"attn-differentiate", "::mlir::ModuleOp"> {
  let summary = "Add the vector-Jacobian product function of attn functions";
  let description = [{
    For a function `@f(args...) -> (results...)` of attn ops, adds the public
    function `@f_vjp(args..., cotangents...) -> (gradients...)`: the
    arguments of `@f`, then one cotangent per result (of the result's type),
    returning the gradient of every argument named by `wrt` (of the
    argument's type). `@f` itself is left as it is.

    The gradient function recomputes the forward: its layer ops are
    decomposed into primitives (as `attn-decompose` does) and each primitive
    gets its vector-Jacobian product in reverse order, as a gradient op of
    the dialect (`attn.project_grad`, `attn.causal_conv1d_grad`,
    `attn.qk_mean_grad`, `attn.qk_norm_grad`, `attn.value_shift_grad`,
    `attn.rope_grad`, `attn.sdpa_grad`) or as the transpose of a tensor op
    (head splits, channel slices and concatenations, casts) or of a
    residual `arith.addf` / `arith.subf`. A value read by several ops (the
    shared tensor of K=V, a weight tied to two roles, the input of every
    projection) gets the sum of their gradients. Both CPU lowerings run the
    result.

    Gradients of integer arguments (padding masks, positions) and through
    decode ops, KV caches or calls are refused with a diagnostic.

    Every `attn.sdpa` of the gradient function also returns the log-sum-exp
    of its rows, which its `attn.sdpa_grad` reads.

    With `residuals`, the forward and the backward are two functions instead
    of `@f_vjp`, so that the backward does not recompute the attention:
    `@f_fwd(args...) -> (results..., residuals...)` is `@f` as primitives
    that also returns, for every `attn.sdpa` in the order of the ops, its
    query, key and value (each once, not an argument), its output and its
    log-sum-exp, and `@f_bwd(args..., residuals..., cotangents...) ->
    (gradients...)` reads those instead of computing them (the CCA steps
    before the attention are recomputed for their own gradients).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to differentiate (default: every public function "
           "without a gradient function)">,
    ListOption<"wrt", "wrt", "int64_t",
               "Indices of the arguments to differentiate (default: every "
               "floating-point tensor argument)">,
    Option<"residuals", "residuals", "bool", /*default=*/"false",
           "Emit @f_fwd (also returning every attention's operands, output "
           "and log-sum-exp) and @f_bwd (reading them) instead of @f_vjp">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnFuse : Pass<"attn-fuse"> {
  let summary = "Fuse attn primitives into prologue and flash-attention kernels";
  let description = [{
    Rewrites the primitives `attn-decompose` produces into the fused kernel
    ops every target lowers one kernel each:

    * `attn.sdpa` -> `attn.flash_attention`; when the value is the
      un-rotated key (K=V), the kernel reads the one tensor for both roles
      and rotates the key role on load (`key_rope`, and `query_rope` for
      `qkv` where the query is that tensor too);
    * the CCA chain (projections, both convolutions, QK-mean, norm with
      temperature, value shift, RoPE) -> `attn.cca_prologue`, which takes
      the mask of an `attn.mask_tokens` in front of the projections as its
      `padding_mask`;
    * a projection split into heads, with its RoPE -> `attn.fused_projection`.
    * decode forms (one new token per sequence, no `lengths`): the CCA chain
      over the conv and shift states -> `attn.cca_decode_prologue`; the cache
      writes and the attention over the cache -> `attn.flash_decode` (K=V
      reads one cache tensor, RoPE on load).

    * any other projection, such as the up-projection, -> a one-head
      `attn.fused_projection` (a tiled GEMM) and a `tensor.collapse_shape`.
    * `attn.project_grad` -> `dx = dy W` as a projection of `dy` by
      `W^T` (a `linalg.transpose`, then that GEMM), `dW = dy^T x` and
      `db = dy^T 1` as `attn.fused_weight_grad` over the tokens; the
      weight gradients of a weight two projections share accumulate in one
      op.

    Primitives that match no pattern are left alone; they lower through the
    reference path. The tile sizes are the options; the defaults suit the
    CPU target.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per flash-attention tile">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"64",
           "Keys per flash-attention tile">,
    Option<"blockS", "block-s", "int64_t", /*default=*/"64",
           "Tokens per prologue and projection tile">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"64",
           "Output features per projection tile (rounded up to whole heads "
           "when RoPE is fused)">,
    Option<"blockK", "block-k", "int64_t", /*default=*/"64",
           "Reduction step of the projection GEMM tiles">,
    Option<"decodeBlockKV", "decode-block-kv", "int64_t", /*default=*/"64",
           "Cached keys per tile of a decode step (attn.flash_decode; the "
           "sm_90a kernels stream 64-row tiles)">,
    Option<"groupedConvGemms", "grouped-conv-gemms", "bool", /*default=*/"true",
           "Rewrite a grouped convolution (groups of 16 or more channels) "
           "and its gradient into per-group GEMMs; off, they stay "
           "attn.causal_conv1d[_grad] (the sm_90a target's convolution "
           "kernels take the whole op)">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def AttnOutlineLayers : Pass<"attn-outline-layers", "::mlir::ModuleOp"> {
  let summary = "Outline identical attn layers (and element-wise ops) into one function each";
  let description = [{
    A model repeats the same layer: 40 `attn.cca` ops with the same
    attributes and types differ only in their weights. Every layer op
    (`attn.qkv_attention`, `attn.cca`, `attn.qkv_decode`, `attn.cca_decode`)
    that has `min-uses` or more equivalent ops in the module (same name,
    attributes and operand and result types; locations and operands aside)
    moves into a private function `@<op>_layer_<n>` that takes its operands
    as arguments, and every occurrence becomes a `func.call` of it. The
    lowering then compiles each distinct layer once instead of once per
    occurrence, and the layers of a decode module's `@prefill` and `@step`
    share their functions when they are the same layer.

    Element-wise ops on tensors (the residual `arith.addf` after each layer:
    any op with the `Elementwise` trait and ranked tensor results) repeat
    between the layers and are outlined the same way, into `@<op>_<n>`
    (`@addf_0`): their vectorized loops, once per occurrence in the caller,
    would otherwise cost the JIT about as much as a layer.

    ```mlir
    // Before: two identical layers.
    %1 = attn.cca %0 wq(%w0) ... : (...) -> tensor<?x?x2048xbf16>
    %3 = attn.cca %2 wq(%w1) ... : (...) -> tensor<?x?x2048xbf16>
    // After.
    %1 = call @cca_layer_0(%0, %w0, ...) : (...) -> tensor<?x?x2048xbf16>
    %3 = call @cca_layer_0(%2, %w1, ...) : (...) -> tensor<?x?x2048xbf16>
    func.func private @cca_layer_0(%x: tensor<?x?x2048xbf16>, ...) -> ... {
      %y = attn.cca %x wq(%wq) ... : (...) -> tensor<?x?x2048xbf16>
      return %y : tensor<?x?x2048xbf16>
    }
    ```
  }];
  let options = [
    Option<"minUses", "min-uses", "int64_t", /*default=*/"2",
           "Outline a layer only when it occurs at least this often">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def AttnCostReport : Pass<"attn-cost-report", "::mlir::ModuleOp"> {
  let summary = "Report KV-cache, state, parameter and FLOP costs of attn layers";
  let description = [{
    For every `attn.qkv_attention` and `attn.cca` op and for the whole module,
    prints:
    * KV-cache values and bytes per token per layer, and per sequence;
    * per-sequence state (CCA convolution and value-shift state);
    * parameter count;
    * prefill FLOPs of the attention (two matmuls, causal- and
      window-aware) and of the projections;
    * the reduction of the cache against an MHA layer of the same width
      (`E / head_dim` heads of `head_dim`, caching K and V).

    The sequence length and batch come from the options when given, else from
    the static input shape, else default to 32768 tokens and batch 1. The
    element type comes from `elem-type` when given, else from the IR.
    The report goes to standard output, as text or (`format=json`) JSON; the
    IR is left unchanged.
  }];
  let options = [
    Option<"seqLen", "seq-len", "int64_t", /*default=*/"32768",
           "Tokens per sequence (overrides a static sequence length)">,
    Option<"batch", "batch", "int64_t", /*default=*/"1",
           "Sequences per batch (overrides a static batch)">,
    Option<"elemType", "elem-type", "std::string", /*default=*/"\"\"",
           "Element type of cache and weights: f32, f16, bf16 or fp8 "
           "(default: the IR's)">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Output format: text or json">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Only the layers of this function (default: every function; a "
           "decode module's prefill and step run the same layers)">
  ];
}

def AttnVectorizeKernelTiles : Pass<"attn-vectorize-kernel-tiles"> {
  let summary = "Register-block and vectorize the static tiles of the CPU kernels";
  let description = [{
    Runs after `convert-attn-kernels-to-scf`, on tensors. Every
    `linalg.generic` with static sizes (the per-tile computations of the
    fused kernels: GEMM tiles, softmax updates, epilogues) is tiled with
    `scf::tileUsingSCF` and vectorized with `linalg::vectorize`:

    * a contraction (`linalg::inferContractionDims`: products summed over
      `k`, such as a projection tile `x[s, k] * W^T[k, n]` or the attention
      tiles `Q K^T` and `P V`) is tiled into register blocks of
      `register-tile-m` rows by `register-tile-n` columns (the output's
      innermost dimension, contiguous in the output and the right operand)
      and one `k` at a time, innermost; the block's accumulator is hoisted
      out of the `k` loop (`hoistLoopInvariantSubsets`), so the loop carries
      it as a `vector<m x n>` value and each step is one
      `vector.contract` that lowers to an outer product: `m` broadcast FMAs
      of `n`-wide vectors, accumulators in registers. Rows that are not a
      whole number of blocks are first split off (`linalg::splitOp`) into
      one shorter block, and a block narrower than `register-tile-n` (the
      columns have no such divisor) takes up to twice the rows;
    * any other generic is tiled to rows of its innermost dimension (every
      outer dimension 1) of at most `max-vector-size` elements
      (`max-reduction-vector-size` when it has a reduction: a row reduced
      over the innermost loop, or a row of sums over an outer one, such as
      a matrix-vector product's partial sums, whose registers are then
      independent FMA chains) and becomes vector element-wise ops and
      `vector.multi_reduction`s.

    Generics whose sizes are dynamic, whose tile sizes would not divide
    their sizes, whose indexing maps are not plain dimensions (a compound
    index such as `d0 + d1`: its tiles would be over-approximated past the
    operand), whose innermost loop reads an operand transposed, or whose
    bodies read tensors (`tensor.extract`, such as a RoPE partner) are left
    alone and lower to loops as before.

    ```mlir
    // Before: one projection tile's accumulation, [64, 64] += [64, 64] x [64, 64].
    %r = linalg.generic {indexing_maps = [(s, k, n) -> (s, k), (s, k, n) -> (k, n),
                                          (s, k, n) -> (s, n)], ...}
        ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>)
    // After: scf.for over 4-row and 16-column blocks, and within each block
    %sum = scf.for %k = %c0 to %c64 step %c1 iter_args(%a = %init) -> (vector<4x16xf32>) {
      %lhs = vector.transfer_read %x[%i, %k] ... : tensor<64x64xf32>, vector<4x1xf32>
      %rhs = vector.transfer_read %w[%k, %j] ... : tensor<64x64xf32>, vector<1x16xf32>
      %c = vector.contract {...} %lhs, %rhs, %a : vector<4x1xf32>, vector<1x16xf32> into vector<4x16xf32>
      scf.yield %c : vector<4x16xf32>
    }
    ```
  }];
  let options = [
    Option<"registerTileM", "register-tile-m", "int64_t", /*default=*/"4",
           "Rows of a contraction's register block (rows that are not a "
           "whole number of blocks are split off into one shorter block; a "
           "block narrower than register-tile-n takes up to twice the rows)">,
    Option<"registerTileN", "register-tile-n", "int64_t", /*default=*/"16",
           "Columns of a contraction's register block (f32: 16 is two AVX2 "
           "registers; the largest divisor not above this is used)">,
    Option<"maxVectorSize", "max-vector-size", "int64_t", /*default=*/"16",
           "Longest row an element-wise or reduction tile is vectorized "
           "over (16 f32 = two AVX2 registers; longer rows gain nothing at "
           "run time and make LLVM's instruction selection slower)">,
    Option<"maxReductionVectorSize", "max-reduction-vector-size", "int64_t",
           /*default=*/"64",
           "Longest row a reduction is vectorized over: a reduction over "
           "the innermost loop (a softmax row maximum or sum) is reduced "
           "vertically across its registers and horizontally once, where "
           "shorter chunks are each reduced horizontally; a row of sums over "
           "an outer loop carries one FMA chain per register, where a "
           "shorter one is bound by the FMA latency">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnLowerKernelVectors : Pass<"attn-lower-kernel-vectors"> {
  let summary = "Lower the vectorized CPU kernel tiles to 1-D vector ops and FMAs";
  let description = [{
    Runs on buffers, after `attn-vectorize-kernel-tiles` and bufferization,
    before `convert-linalg-to-loops` and `convert-vector-to-llvm`. First
    gives `scf.if` results that bufferization made fully dynamic their
    static layout back when both branches yield the same one (a dynamic
    innermost stride turns vector loads into element loops), and turns
    `memref.copy` between strided views into `linalg.copy` loops (the
    `memrefCopy` runtime function copies them element by element). Lowers each `vector.contract` to
    `vector.outerproduct`s and those to broadcast FMAs (`vector.fma`) on
    1-D vectors, so a register block is `m` FMAs per k; lowers
    `vector.multi_reduction` to inner reductions, n-D transfers to unrolled
    1-D loads and stores (`convert-vector-to-scf` full unrolling), and
    broadcasts, transposes and shape casts to 1-D ops. `math.exp` on
    vectors becomes MLIR's f32 polynomial approximation (LLVM would
    otherwise call `expf` once per lane).

    ```mlir
    %c = vector.contract {...} %lhs, %rhs, %acc
        : vector<4x1xf32>, vector<1x16xf32> into vector<4x16xf32>
    // becomes, for each of the 4 rows r:
    %a = vector.extract %lhs_column[r] : f32 from vector<4xf32>
    %b = vector.broadcast %a : f32 to vector<16xf32>
    %row = vector.fma %b, %rhs_row, %acc_r : vector<16xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnFreeBuffersEarly : Pass<"attn-free-buffers-early"> {
  let summary = "Free each buffer right after its last use in its block";
  let description = [{
    Runs on buffers, after the ownership-based deallocation pipeline and
    `convert-bufferization-to-memref`. That pipeline frees a buffer at the
    end of the block that allocated it, so every temporary of a function
    body lives until the function returns: a training backward's packed
    operands, gradients and products all at once. This pass moves each
    `memref.dealloc` of a `memref.alloc` of the same block to just after
    the last op of the block that uses the buffer or a view of it (an op
    whose region uses it counts as a use). A buffer whose view leaves
    through a terminator or a call, whose address is taken as an integer
    (the deallocation helpers compare addresses, and a later allocation may
    reuse a freed one), or which an op other than a view turns into another
    memref is left as it was.

    ```mlir
    %a = memref.alloc(%n) : memref<?xf32>
    linalg.generic ... outs(%a : memref<?xf32>)
    linalg.generic ... ins(%a : memref<?xf32>) outs(%b : memref<?xf32>)
    memref.dealloc %a : memref<?xf32>   // moved here
    linalg.generic ... ins(%b : memref<?xf32>) outs(%c : memref<?xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def AttnReuseLoopBuffers : Pass<"attn-reuse-loop-buffers"> {
  let summary = "Allocate a loop iteration's static buffers once per loop";
  let description = [{
    Runs on buffers, after `attn-free-buffers-early`. A kernel's tile
    buffers (a score tile, a converted key tile) are allocated and freed in
    every iteration of its key loop: tens of thousands of heap calls per
    attention. A `memref.alloc` of a static shape whose `memref.dealloc` is
    in the same `scf.for` body, with no view of it leaving the iteration
    (the conditions of `attn-free-buffers-early`), is moved before the loop
    and its dealloc after it, out of every such enclosing loop. A fresh
    buffer's contents are undefined, so reusing one across iterations
    changes nothing. Parallel loops (`scf.parallel`, `scf.forall`) are never
    crossed: their iterations may run at the same time, each needing its
    own buffer.

    ```mlir
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<64x64xf32>   // moved before the loop
      linalg.generic ... outs(%t : memref<64x64xf32>)
      memref.dealloc %t : memref<64x64xf32>     // moved after the loop
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_TD
