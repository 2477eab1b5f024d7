//===- Passes.td - AttnFuse conversion passes --------------*- tablegen -*-===//

#ifndef ATTNFUSE_CONVERSION_PASSES_TD
#define ATTNFUSE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalgPass : Pass<"convert-attn-to-linalg"> {
  let summary = "Lower the primitive attn ops to linalg, tensor, arith and math";
  let description = [{
    The reference lowering of the attn primitives (`attn.project`,
    `attn.causal_conv1d`, `attn.qk_mean`, `attn.qk_norm`,
    `attn.value_shift`, `attn.rope`, `attn.sdpa`, and the cache and state
    primitives `attn.cache_update`, `attn.cache_gather`,
    `attn.state_update`) on tensors to
    `linalg.generic` / `linalg.fill` and `tensor` slicing, with `arith` and
    `math` in the bodies. Dynamic batch and sequence sizes are read with
    `tensor.dim`.

    Arithmetic runs in f32 when the element type is bf16 or f16 (inputs are
    extended in the loop bodies, results truncated once), otherwise in the
    element type. The softmax of `attn.sdpa` subtracts the row maximum and
    a fully masked row yields zeros. RoPE angles are computed in f64.

    The layer ops (`attn.qkv_attention`, `attn.cca` and their decode forms)
    are not lowered: run
    `attn-decompose` first (the `attn-to-cpu` pipeline does); the pass fails
    on them with that advice. Other attn ops (the fused kernel ops) are left
    to `convert-attn-kernels-to-scf`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def ConvertAttnKernelsToSCFPass : Pass<"convert-attn-kernels-to-scf"> {
  let summary = "Lower the fused attn kernel ops to tiled loops on tensors";
  let description = [{
    The CPU form of the fused kernels. `attn.flash_attention`,
    `attn.fused_projection`, `attn.cca_prologue` and `attn.flash_decode`
    are tiled through their `TilingInterface` with upstream
    `scf::tileUsingSCF` (tile sizes `[1, 1, block_q]` over batch, KV heads
    and query rows; `block_s` tokens by about `block_n` features;
    `[1, block_s]` over batch and tokens; one sequence and KV head, or one
    KV head of every sequence of a paged cache) and each tile, the op on
    the tile's slices, is decomposed into linalg on tensors (a decode tile
    streams its keys in blocks of `block_kv`). Tiles are computed with
    `linalg.generic` ops whose innermost dimension is contiguous, `tensor`
    slices for the tiles and f32 arithmetic for 16-bit element types.
    Inputs are zero-padded to whole tiles so every tile computation has a
    static shape. `attn.cca_decode_prologue` (one token per sequence)
    becomes `linalg.generic` ops over the batch.

    With `parallel=true` the tile loops are one `scf.forall` whose
    `shared_outs` are the inits (for `attn.flash_decode` the output's and
    the caches) and whose iterations write their tiles with
    `tensor.parallel_insert_slice`: (batch, KV head, query block) for
    `attn.flash_attention`, (batch, token block, head block) for
    `attn.fused_projection`, (batch, token block) for `attn.cca_prologue`
    and (batch, KV head) for `attn.flash_decode`, whose tile writes its new
    cache rows and then reads only its own cache slice.
    Every reduction (over keys, over the model width, the convolution taps)
    stays inside one iteration, so the results do not depend on how the
    iterations are spread over threads.
  }];
  let options = [
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "Make the independent outer tile loops one scf.forall">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def ConvertAttnKernelsToNVVMPass
    : Pass<"convert-attn-kernels-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower the fused attn kernel ops to sm_90a kernels (gpu.func "
                "in NVVM / LLVM dialect)";
  let description = [{
    Each `attn.flash_attention` becomes a warp-specialized Hopper kernel
    (`gpu.func` in its own `gpu.module`): a producer warpgroup issuing TMA
    loads of K/V tiles into a multi-stage shared-memory ring synchronized
    with mbarriers, consumer warpgroups computing `Q K^T` with SS wgmma, the
    online softmax in registers and `P V` with RS wgmma (P stays in
    registers), `setmaxnreg` register reallocation, causal and window tile
    skipping, GQA heads packed into the rows of one tile. Its query and key
    tiles are the op's `block_q` (64, 128 or 192: one consumer warpgroup per
    64 rows) and `block_kv` (64 or 128); other values are an error on the
    op. Each
    `attn.fused_projection` (and `attn.project`) becomes a TMA + wgmma GEMM
    with the bias / RoPE epilogue. `attn.cca_prologue` becomes one kernel per
    block of tokens and KV group; `attn.cca_decode_prologue` one kernel per
    head and sequence whose grouped convolution is a vectorized GEMV.
    `arith.addf` on whole tensors in a function that launches kernels (the
    residual stream of a model) becomes an element-wise kernel, so that the
    host program of a model only launches kernels.

    The op is replaced by a `func.call` to a private declaration
    `@<kernel>_launch` whose `attnfuse.launch` attribute (an
    `#attn.kernel_launch`) describes the launch
    (grid and block as functions of the dynamic sizes, dynamic shared
    memory, parameters, tensors and the TMA descriptors the host encodes);
    `attnfuse-compile` writes it to manifest.json. Kernels of identical
    configuration are emitted once. Ops without an sm_90a kernel stay on the
    host side and are left unchanged.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target chip; only sm_90a (wgmma, setmaxnreg) is supported">,
    Option<"elemType", "elem-type", "std::string", /*default=*/"\"bf16\"",
           "Kernel element type: bf16 or f16 (f32 ops run in this type, "
           "converted by the host)">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "Depth of the shared-memory K/V (or A/B) ring">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def AttnNVVMKernelParamsPass
    : Pass<"attn-nvvm-kernel-params", "::mlir::ModuleOp"> {
  let summary = "Pass the CUtensorMap kernel parameters by value as "
                "__grid_constant__";
  let description = [{
    Runs after `convert-gpu-to-nvvm`: the parameters that
    `convert-attn-kernels-to-nvvm` listed in `attnfuse.tma_params` become
    `llvm.byval = !llvm.array<128 x i8>`, `llvm.align = 64` and
    `nvvm.grid_constant`, so the 128-byte tensor maps live in the kernel
    parameter space (`.param .align 64 .b8 name[128]`) and TMA reads them
    from there, as CUTLASS and FlashAttention-3 pass them.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect"
  ];
}


def ConvertAssertToErrorReturnPass
    : Pass<"convert-assert-to-error-return", "::mlir::ModuleOp"> {
  let summary = "Make failed run-time checks return an error from the "
                "function instead of aborting the process";
  let description = [{
    For functions already lowered to `llvm.func` (run it after
    `convert-func-to-llvm`, before `convert-cf-to-llvm`): each `cf.assert`
    becomes a branch that, when its condition is false, calls
    `attnfuse_check_failed(message)` and returns from the function at once
    (with a poison result), so that no code after a failed check runs. A
    call of a function that can fail this way is followed by a call of
    `attnfuse_check_pending()` (non-zero after a failure on this thread)
    and the same early return. With `check-allocations`, a null pointer from
    an allocation function (`malloc`, `aligned_alloc`,
    `_mlir_memref_to_llvm_alloc`, `_mlir_memref_to_llvm_aligned_alloc`)
    fails the same way.

    A check or checked allocation inside the region of an op (the
    `omp.loop_nest` of a parallel loop, whose iterations other threads run)
    cannot return from the function: its failure calls
    `attnfuse_check_failed_in(state, message)` with the `state` that
    `attnfuse_call_state()` returned at the function's entry and ends the
    region (its iteration) at once; right after the op that holds the region
    the function returns if `attnfuse_check_pending()` says a check failed.
    A call of a function that can fail inside such a region is an error.

    The host provides these functions (the CPU JIT does), discards the
    results of a failed call and frees what the call allocated: the early
    return skips the deallocations that follow it.

    ```mlir
    // Before (in an llvm.func):
    cf.assert %ok, "out-of-bounds slice"
    // After:
    llvm.cond_br %ok, ^continue, ^failed
    ^failed:
      llvm.call @attnfuse_check_failed(%message) : (!llvm.ptr) -> ()
      llvm.br ^return_poison
    ```
  }];
  let options = [
    Option<"checkAllocations", "check-allocations", "bool",
           /*default=*/"false",
           "Treat a null pointer from an allocation function as a failed "
           "check (out of memory)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ATTNFUSE_CONVERSION_PASSES_TD
