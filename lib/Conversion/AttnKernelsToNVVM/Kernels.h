//===- Kernels.h - sm_90a kernels of the fused attn ops ---------*- C++ -*-===//
//
// Planning (tile sizes, shared-memory layout, register split, launch shape)
// and generation of the Hopper kernels, plus the host-side description of
// each kernel that `attnfuse-compile` turns into manifest.json.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_KERNELS_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_KERNELS_H

#include "DeviceBuilder.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <optional>
#include <string>

namespace attnfuse::sm90 {

/// Limits of one H100/H200 SM that the plans respect.
constexpr int64_t kMaxDynamicSharedBytes = 232448; // 227 KiB opt-in
constexpr int64_t kRegistersPerSM = 65536;
/// Output columns of a projection GEMM tile (two 64-column slabs).
constexpr int64_t kGemmTileColumns = 128;
/// Name of the dynamic shared memory symbol of every kernel module.
constexpr llvm::StringLiteral kSharedSymbol = "attn_dynamic_smem";
/// Function attribute listing the CUtensorMap parameters that
/// `attn-nvvm-kernel-params` turns into byval + nvvm.grid_constant.
constexpr llvm::StringLiteral kTmaArgsAttr = "attnfuse.tma_params";

/// Options shared by all kernels (the pass options). The flash attention
/// tiles are not among them: they are the op's `block_q` / `block_kv`, which
/// attn-fuse chose, so the IR is their one source of truth.
struct TargetOptions {
  std::string chip = "sm_90a";
  ElemKind elem = ElemKind::bf16;
  int64_t stages = 2;
};

/// The TMA descriptor a kernel parameter expects; dims innermost first, as
/// cuTensorMapEncodeTiled takes them. Sizes are integers or expressions of
/// the dynamic dimensions (strings such as "S" or "4096*S").
struct TmaInfo {
  std::string param;  // kernel parameter name
  std::string tensor; // the tensor it addresses
  llvm::SmallVector<mlir::Attribute> globalDim;
  llvm::SmallVector<mlir::Attribute> globalStridesBytes; // rank - 1 entries
  llvm::SmallVector<int64_t> boxDim;
  std::string role; // "load" / "store"
};

/// The plan of one attn.flash_attention kernel, or of the dQ kernel of an
/// attn.flash_attention_grad (the same query-tile CTA over the key tiles).
/// What every kernel plan has: the element type of the kernel's 16-bit
/// tensors, whether the host converts f32 tensors to it, the threads of a
/// CTA and the kernel's name.
struct KernelPlan {
  ElemKind elem = ElemKind::bf16;
  bool hostCastFromF32 = false;
  int64_t threads = 0;
  std::string name;

  /// Sets `elem` and `hostCastFromF32` for tensors of `elementType` (see
  /// kernelElemKind); on failure the diagnostic is on `op`.
  mlir::LogicalResult setElementType(mlir::Operation *op,
                                     mlir::Type elementType,
                                     const TargetOptions &options);
};

/// What the attention kernels take alike from their op: the flash kernels
/// over query tiles (forward, dQ, dK/dV) and the decode kernels over a step's
/// keys.
struct AttentionConfig : KernelPlan {
  int64_t headDim, valueDim, numHeads, numKvHeads, group;
  bool keyIsValue;
  std::optional<int64_t> window;
  double scale;
  int64_t queryRotated = 0, keyRotated = 0; // RoPE dims (0: none)
  bool sharedRopeTable = false;             // query and key use one table pair
};
class DictBuilder;
/// The launch configuration entries of `config`'s fields.
DictBuilder attentionConfig(mlir::MLIRContext *ctx,
                            const AttentionConfig &config);

struct FlashPlan : AttentionConfig {
  /// The dQ kernel: dQ = scale sum_j dS_ij k_j with dS = P (dP - D), P from
  /// the forward's log-sum-exp; it also writes D = rowsum(dO * O).
  bool queryGrad = false;
  /// The forward also stores each row's log-sum-exp (its `lse` result).
  bool writesLse = false;
  int64_t pack;
  /// The shared-memory columns of a query / key (value) row: the head dim
  /// rounded up to whole 64-column slabs. TMA fills the columns past the
  /// tensor's with zeros, which add nothing to Q K^T and give O columns that
  /// the TMA store clips.
  int64_t headCols, valueCols;
  int64_t blockQ, blockKV, stages, consumers;
  bool causal;
  int64_t keyMaskBits = 0; // key_mask element width (32, 64; 0: none)
  // Launch and resources.
  int64_t minBlocksPerSM, producerRegs, consumerRegs;
  int64_t qSlabBytes, kStageBytes, vStageBytes, rotStageBytes;
  int64_t qOff, doOff = 0, kOff, vOff, rotOff, barOff, sharedBytes;

  /// Positions per CTA (`block_q / pack`).
  int64_t positions() const { return blockQ / pack; }
  /// A canonical string of everything the generated code depends on.
  std::string key() const;
};

/// Validates `op` against the sm_90a kernel and the options, reporting
/// unsupported shapes on `op`.
mlir::FailureOr<FlashPlan> planFlashAttention(attn::FlashAttentionOp op,
                                              const TargetOptions &options);
/// Plans the dQ kernel of `op` (see FlashGradPlan).
mlir::FailureOr<FlashPlan> planFlashQueryGrad(attn::FlashAttentionGradOp op,
                                              const TargetOptions &options);
/// Emits the kernel (the forward or the dQ kernel) into `module`.
void buildFlashAttentionKernel(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::gpu::GPUModuleOp module,
                               const FlashPlan &plan);
/// The host-side description (launch shape, parameters, TMA descriptors).
attn::KernelLaunchAttr describeFlashAttention(mlir::MLIRContext *ctx,
                                              attn::FlashAttentionOp op,
                                              const FlashPlan &plan);

/// The grid of a query-tile kernel: (query blocks, head packs, batch).
llvm::SmallVector<mlir::Attribute> queryTileGrid(mlir::MLIRContext *ctx,
                                                 const FlashPlan &p);
/// The launch configuration both query-tile kernels report.
DictBuilder queryTileConfig(mlir::MLIRContext *ctx, const FlashPlan &p);
/// The TMA descriptors (and parameters) of Q, K and [V] of a query-tile
/// kernel.
void describeQueryTileLoads(mlir::MLIRContext *ctx, const FlashPlan &p,
                            llvm::SmallVectorImpl<mlir::Attribute> &tmas,
                            llvm::SmallVectorImpl<mlir::Attribute> &params);

/// The plan of one attn.flash_attention_grad on sm_90a: two kernels.
/// 1. `query`, the dQ kernel (grid as the forward's): D = rowsum(dO * O)
///    into the f32 workspace `delta [B, S, Hq]`, and dQ.
/// 2. The dK/dV kernel: one CTA of `consumers` warpgroups of 64 keys each
///    per (key block, KV head, batch); the K (and V) slabs are loaded once,
///    the Q and dO tiles of every query head of the group stream through a
///    TMA ring, and S^T = K Q^T, dP^T = V dO^T, dV += P^T dO,
///    dK += dS^T Q run on wgmma with dK and dV (one dKV for K=V) in
///    registers. Recomputing S and dP in both kernels (7 tile products
///    instead of 5) keeps dQ free of atomics and of an f32 dQ buffer.
struct FlashGradPlan {
  FlashPlan query;
  int64_t consumers, threads, minBlocksPerSM, producerRegs, consumerRegs;
  int64_t kSlabBytes, vSlabBytes, qStageBytes, doStageBytes;
  int64_t kOff, vOff, qOff, doOff, statsOff, barOff, sharedBytes;
  std::string name; // the dK/dV kernel

  /// One query tile's row statistics in shared memory: the lse (as the
  /// probability offset) and D of its 64 columns, f32.
  static constexpr int64_t kRowStatsBytes = 2 * 64 * 4;

  /// Keys per dK/dV CTA.
  int64_t blockKeys() const { return 64 * consumers; }
  std::string key() const;
};

mlir::FailureOr<FlashGradPlan>
planFlashAttentionGrad(attn::FlashAttentionGradOp op,
                       const TargetOptions &options);
void buildFlashKeyValueGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::gpu::GPUModuleOp module,
                                  const FlashGradPlan &plan);
/// The dQ kernel's launch: operands (q, k, [v], o, do, [key_mask], lse),
/// results (dq, delta).
attn::KernelLaunchAttr describeFlashQueryGrad(mlir::MLIRContext *ctx,
                                              attn::FlashAttentionGradOp op,
                                              const FlashGradPlan &plan);
/// The dK/dV kernel's launch: operands (q, k, [v], do, [key_mask], lse,
/// delta), results (dk, [dv]).
attn::KernelLaunchAttr describeFlashKeyValueGrad(mlir::MLIRContext *ctx,
                                                 attn::FlashAttentionGradOp op,
                                                 const FlashGradPlan &plan);

/// A `[batch, seq, heads, dim]` tensor of an attention kernel (`seq` the
/// symbol of its length), row-major and contiguous.
attn::KernelTensorAttr attentionTensor(mlir::MLIRContext *ctx, ElemKind elem,
                                       llvm::StringRef name,
                                       llvm::StringRef role, int64_t operand,
                                       int64_t heads, int64_t dim,
                                       llvm::StringRef seq);
/// The TMA descriptor of such a tensor, dims innermost first
/// {dim, heads, seq, batch}.
mlir::DictionaryAttr attentionTma(mlir::MLIRContext *ctx, ElemKind elem,
                                  llvm::StringRef param, llvm::StringRef tensor,
                                  int64_t heads, int64_t dim,
                                  llvm::StringRef seq,
                                  llvm::ArrayRef<int64_t> box,
                                  llvm::StringRef role);
/// A `[batch, seq, heads]` f32 row statistic (log-sum-exp, D).
attn::KernelTensorAttr rowStatTensor(mlir::MLIRContext *ctx,
                                     llvm::StringRef name, llvm::StringRef role,
                                     int64_t operand, int64_t heads);
/// The key mask `[batch, T]` of an attention kernel (`bits` wide) and its
/// pointer parameter.
void describeKeyMask(mlir::MLIRContext *ctx, int64_t operand, int64_t bits,
                     llvm::SmallVectorImpl<mlir::Attribute> &tensors,
                     llvm::SmallVectorImpl<mlir::Attribute> &params);
/// Grid entries: `ceil_div(symbol, n)`, and a constant.
mlir::DictionaryAttr gridCeilDiv(mlir::MLIRContext *ctx, llvm::StringRef symbol,
                                 int64_t n);
mlir::DictionaryAttr gridConstant(mlir::MLIRContext *ctx, int64_t n);

/// The plan of one projection GEMM (attn.fused_projection, or attn.project
/// as a GEMM without head split and RoPE).
struct GemmPlan : KernelPlan {
  int64_t inFeatures, outFeatures, headDim; // headDim = N for attn.project
  bool hasBias;
  int64_t rotated = 0; // RoPE dims per head (0: none)
  bool fromProject = false;
  /// The weight is W^T ([in, out], attn.fused_projection's
  /// transposed_weight): B is read MN-major.
  bool transposedWeight = false;
  int64_t blockM, blockN, blockK, stages, consumers;
  int64_t producerRegs, consumerRegs;
  int64_t aStageBytes, bStageBytes, cBytes;
  int64_t aOff, bOff, cOff, barOff, sharedBytes;
  std::string key() const;
};

mlir::FailureOr<GemmPlan> planProjection(mlir::Operation *op,
                                         const TargetOptions &options);
void buildProjectionKernel(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::gpu::GPUModuleOp module, const GemmPlan &plan);
attn::KernelLaunchAttr describeProjection(mlir::MLIRContext *ctx,
                                          mlir::Operation *op,
                                          const GemmPlan &plan);

/// The plan of one attn.fused_weight_grad kernel: dW tiles of 128 output x
/// 128 input features per CTA, the tokens reduced in steps of 64.
struct WeightGradPlan : KernelPlan {
  static constexpr int64_t kBlockM = 128, kBlockN = 128, kBlockK = 64;
  static constexpr int64_t kConsumers = 2;
  /// One operand of one stage: 64 tokens x 128 features of 16 bits.
  static constexpr int64_t kStageOperandBytes = kBlockK * 128 * 2;
  int64_t inFeatures, outFeatures;
  /// The init is not a zero fill: the epilogue adds it.
  bool readsInit;
  /// Split over the tokens: with fewer dW tiles than SMs, `splits` CTAs per
  /// tile each reduce an equal share of the k steps into f32 partial tiles
  /// `[splits, out, in]`, which a SIMT combine kernel (`combineName`) sums
  /// in a fixed order, with the init, into dW. 1: one kernel, no partials.
  int64_t splits = 1;
  static constexpr int64_t kSplitTargetCtas = 132; // H100 / H200 SMs
  static constexpr int64_t kMaxSplits = 8;
  static constexpr int64_t kCombineThreads = 256;
  std::string combineName;
  bool split() const { return splits > 1; }
  /// The GEMM's epilogue adds the init (with a split the combine does).
  bool gemmAddsInit() const { return readsInit && !split(); }
  /// The f32 partial tiles, `[splits, out, in]`.
  mlir::RankedTensorType partialsType(mlir::MLIRContext *ctx) const;
  int64_t stages, producerRegs = 40, consumerRegs;
  int64_t aOff, bOff, cOff, barOff, sharedBytes;
  std::string key() const;

  /// One input feature (a bias gradient): the column-sum kernel of
  /// BiasGrad.cpp instead of the GEMM. `inputFill` is X's value when X is a
  /// constant fill, which the kernel then does not read; `vector` is the
  /// columns per thread.
  bool columnSum() const { return inFeatures == 1; }
  std::optional<double> inputFill;
  int64_t vector = 1;
  static constexpr int64_t kBiasWarps = 8;
  int64_t biasColumnsPerCta() const { return 32 * vector; }
};

mlir::FailureOr<WeightGradPlan> planWeightGrad(attn::FusedWeightGradOp op,
                                               const TargetOptions &options);
/// The column-sum parts of a plan with one input feature (BiasGrad.cpp).
void planBiasGrad(WeightGradPlan &plan);
/// The combine kernel of a split plan: dW = init + the sum of the partials.
void buildWeightGradCombineKernel(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::gpu::GPUModuleOp module,
                                  const WeightGradPlan &plan);
attn::KernelLaunchAttr describeWeightGradCombine(mlir::MLIRContext *ctx,
                                                 const WeightGradPlan &plan);
void buildBiasGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::gpu::GPUModuleOp module,
                         const WeightGradPlan &plan);
attn::KernelLaunchAttr describeBiasGrad(mlir::MLIRContext *ctx,
                                        const WeightGradPlan &plan);
void buildWeightGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::gpu::GPUModuleOp module,
                           const WeightGradPlan &plan);
attn::KernelLaunchAttr describeWeightGrad(mlir::MLIRContext *ctx,
                                          attn::FusedWeightGradOp op,
                                          const WeightGradPlan &plan);

/// What the CCA prologue kernels of a prefill (attn.cca_prologue) and of a
/// decode step (attn.cca_decode_prologue) take alike from their op.
struct CCAConfig : KernelPlan {
  int64_t numHeads, numKvHeads, headDim, group;
  int64_t k0, k1, padding;
  bool qkMean, valueShift, clamped;
  double eps;
  /// norm = <clamp_eps>: divide by max(|x|, eps) instead of
  /// sqrt(|x|^2 + eps).
  bool clampEps;
  int64_t rotated = 0;
  double theta = 10000.0;
  /// The fields above, for a plan's key.
  std::string configKey() const;
};

/// The launch configuration entries of `config`'s fields.
DictBuilder ccaConfig(mlir::MLIRContext *ctx, const CCAConfig &config);

/// Fills `config` from `op` (attn.cca_prologue or attn.cca_decode_prologue)
/// whose activations have `elementType`; on failure either reports an
/// error on `op` or, with `unsupported` set, leaves the op to the host.
template <typename OpTy>
mlir::LogicalResult planCCAConfig(OpTy op, mlir::Type elementType,
                                  const TargetOptions &options,
                                  CCAConfig &config, std::string &unsupported);

/// The plan of one attn.cca_prologue kernel: one CTA of two warpgroups per
/// (block of 64 tokens, KV group, batch).
struct ProloguePlan : CCAConfig {
  int64_t width, halo;
  int64_t paddingMaskBits = 0; // padding_mask element width (32, 64; 0: none)
  int64_t blockS, rows, midRows, tiles, convChannels, channels;
  int64_t stages;
  int64_t aStageBytes, bStageBytes;
  int64_t aOff, bOff, scratchOff, uOff, partOff, barOff, sharedBytes;
  std::string key() const;
};

/// Plans `op`; on failure either reports an error on `op` (bad element
/// type) or, with `unsupported` set, leaves the op to the host.
mlir::FailureOr<ProloguePlan> planCCAPrologue(attn::CCAPrologueOp op,
                                              const TargetOptions &options,
                                              std::string &unsupported);
void buildCCAPrologueKernel(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::gpu::GPUModuleOp module,
                            const ProloguePlan &plan);
attn::KernelLaunchAttr describeCCAPrologue(mlir::MLIRContext *ctx,
                                           attn::CCAPrologueOp op,
                                           const ProloguePlan &plan);

/// The plan of one attn.flash_decode: a split kernel (grid num_splits x Hk x
/// B, one CTA of 128 threads per split of the keys of one KV head of one
/// sequence) and a combine kernel (grid Hq x B, value_dim threads).
struct DecodePlan : AttentionConfig {
  int64_t blockKV, stages;
  bool paged;
  int64_t pageSize = 0; // paged caches only
  int64_t numSplits = 0; // 0: the runtime expression of describe
  int64_t minBlocksPerSM;
  // P V thread layout: heads per thread, head blocks, row parts per tile.
  int64_t pvHeads, pvHeadBlocks, pvRowParts;
  // Shared memory (bytes from a 1024-byte aligned base): padded K (and V)
  // rows per stage, the f32 query rows, the f32 score rows, the running max,
  // sum and rescale factor per head, one mbarrier per stage.
  int64_t kRowBytes, vRowBytes, pRowBytes;
  int64_t kOff, vOff, qOff, pOff, maxOff, sumOff, alphaOff, barOff;
  int64_t sharedBytes;
  std::string combineName; // the combine kernel (`name`: the split kernel)
  /// Columns of one workspace row: dv partial outputs, the log2-domain
  /// log-sum-exp, padding to 16 bytes.
  int64_t workspaceRow() const { return valueDim + 4; }
  std::string key() const;
};

mlir::FailureOr<DecodePlan> planFlashDecode(attn::FlashDecodeOp op,
                                            const TargetOptions &options);
void buildFlashDecodeSplitKernel(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::gpu::GPUModuleOp module,
                                 const DecodePlan &plan);
void buildFlashDecodeCombineKernel(mlir::OpBuilder &b, mlir::Location loc,
                                   mlir::gpu::GPUModuleOp module,
                                   const DecodePlan &plan);
/// The expression (over B, S, T) of the number of splits.
std::string decodeSplitsExpr(attn::FlashDecodeOp op, const DecodePlan &plan);
attn::KernelLaunchAttr describeFlashDecodeSplit(mlir::MLIRContext *ctx,
                                                attn::FlashDecodeOp op,
                                                const DecodePlan &plan);
attn::KernelLaunchAttr describeFlashDecodeCombine(mlir::MLIRContext *ctx,
                                                  attn::FlashDecodeOp op,
                                                  const DecodePlan &plan);

/// The plan of one attn.cca_decode_prologue kernel: one CTA of 256 threads
/// per (head, sequence), heads = the num_heads query heads, then the
/// num_kv_heads key heads (the conv channel order). No TMA or wgmma: the
/// grouped convolution of one token is a GEMV over the head's
/// [head_dim, head_dim * k1] weight rows, read with 16-byte vector loads.
struct DecodePrologueKernelPlan : CCAConfig {
  int64_t warps;
  /// The GEMV: weight rows per warp, 16-byte chunks per row and per lane,
  /// rows unrolled per batch of loads.
  int64_t rowsPerWarp, chunksPerRow, chunksPerLane, rowBatch;
  int64_t mOff, convOff, partOff, rotOff, sharedBytes;
  std::string key() const;
};

/// Plans `op`; on failure either reports an error on `op` (bad element
/// type) or, with `unsupported` set, leaves the op to the host.
mlir::FailureOr<DecodePrologueKernelPlan>
planCCADecodePrologue(attn::CCADecodePrologueOp op,
                      const TargetOptions &options, std::string &unsupported);
void buildCCADecodePrologueKernel(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::gpu::GPUModuleOp module,
                                  const DecodePrologueKernelPlan &plan);
attn::KernelLaunchAttr
describeCCADecodePrologue(mlir::MLIRContext *ctx, attn::CCADecodePrologueOp op,
                          const DecodePrologueKernelPlan &plan);

/// The plan of one attn.cache_update kernel: one CTA per (new token,
/// sequence) copies the token's `[kv_heads, head_dim]` row into its cache row
/// (contiguous or through the block table), in place.
struct CacheUpdatePlan : KernelPlan {
  bool paged;
  int64_t pageSize = 0; // paged caches only
  int64_t numKvHeads, headDim;
  int64_t positionBits, lengthBits = 0, tableBits = 0; // 0: no operand
  int64_t vector; // elements per load / store
  std::string key() const;
};

/// Plans `op`; on failure either reports an error on `op` or, with
/// `unsupported` set, leaves the op to the host.
mlir::FailureOr<CacheUpdatePlan> planCacheUpdate(attn::CacheUpdateOp op,
                                                 const TargetOptions &options,
                                                 std::string &unsupported);
void buildCacheUpdateKernel(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::gpu::GPUModuleOp module,
                            const CacheUpdatePlan &plan);
attn::KernelLaunchAttr describeCacheUpdate(mlir::MLIRContext *ctx,
                                           attn::CacheUpdateOp op,
                                           const CacheUpdatePlan &plan);

/// The plan of one attn.cache_gather kernel: one CTA per (block-table entry,
/// sequence) copies one page (contiguous in both tensors).
struct CacheGatherPlan : KernelPlan {
  int64_t pageSize, numKvHeads, headDim;
  int64_t tableBits;
  int64_t vector;
  std::string key() const;
};

mlir::FailureOr<CacheGatherPlan> planCacheGather(attn::CacheGatherOp op,
                                                 const TargetOptions &options,
                                                 std::string &unsupported);
void buildCacheGatherKernel(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::gpu::GPUModuleOp module,
                            const CacheGatherPlan &plan);
attn::KernelLaunchAttr describeCacheGather(mlir::MLIRContext *ctx,
                                           attn::CacheGatherOp op,
                                           const CacheGatherPlan &plan);

/// The plan of one attn.rope kernel: one CTA per (token, sequence) rotates
/// every head of the token, angles from the f32 cos/sin tables.
struct RopeKernelPlan : KernelPlan {
  int64_t numHeads, headDim, rotated;
  double theta;
  int64_t positionBits = 0; // 0: no positions operand
  /// attn.rope_grad: the rotation by the opposite angle.
  bool inverse = false;
  int64_t vector;
  std::string key() const;
};

/// Plans attn.rope or attn.rope_grad.
mlir::FailureOr<RopeKernelPlan> planRope(mlir::Operation *op,
                                         const TargetOptions &options,
                                         std::string &unsupported);
void buildRopeKernel(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::gpu::GPUModuleOp module, const RopeKernelPlan &plan);
attn::KernelLaunchAttr describeRope(mlir::MLIRContext *ctx, mlir::Operation *op,
                                    const RopeKernelPlan &plan);

/// The plan of one attn.sdpa kernel (SIMT, f32 online softmax): one CTA of
/// `warps` warps per (block of `blockQ` query rows, query head, sequence);
/// each warp owns `rowsPerWarp` rows, a lane one key of each `blockKV`-key
/// tile (staged in shared memory as f32) for the scores and `value_dim / 32`
/// output columns for P V.
struct SdpaPlan : KernelPlan {
  int64_t headDim, valueDim, numHeads, numKvHeads, group;
  bool causal;
  std::optional<int64_t> window;
  double scale;
  int64_t biasRank = 0;     // 0: no bias, 2: [S, T], 3: [Hq, S, T]
  int64_t positionBits = 0; // 0: no positions operand
  int64_t keyMaskBits = 0;  // 0: no key mask
  int64_t warps, rowsPerWarp, blockQ, blockKV;
  int64_t qStride, kStride, vStride; // f32 elements per shared row
  int64_t qOff, kOff, vOff, pOff, sharedBytes;
  std::string key() const;
};

mlir::FailureOr<SdpaPlan> planSdpa(attn::SDPAOp op,
                                   const TargetOptions &options,
                                   std::string &unsupported);
void buildSdpaKernel(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::gpu::GPUModuleOp module, const SdpaPlan &plan);
attn::KernelLaunchAttr describeSdpa(mlir::MLIRContext *ctx, attn::SDPAOp op,
                                    const SdpaPlan &plan);

/// The plan of one attn.causal_conv1d kernel (SIMT): one CTA per (output
/// time step, sequence), threads over the output channels. For
/// attn.causal_conv1d_grad (`gradient`) two kernels: `name` computes the
/// input gradient (one CTA per (input step, sequence), threads over the
/// input channels), `weightGradName` the weight and bias gradients (a
/// thread per weight or bias element, summing over every output step of
/// every sequence in a fixed order).
struct ConvPlan : KernelPlan {
  int64_t channels, groupWidth, taps, padding;
  bool hasBias;
  bool gradient = false;
  /// Gradient plans: the weight and bias gradients take two kernels.
  /// `weightGradName` sums each of `tokenChunks` chunks of every sequence's
  /// output steps into f32 partials (partialsType); `weightSumName` adds
  /// those in a fixed order.
  std::string weightGradName, weightSumName;
  int64_t tokenChunks = 1;
  static constexpr int64_t kWeightGradThreads = 256;
  static constexpr int64_t kMaxTokenChunks = 32;
  /// Weight elements, then the bias's: the weight-gradient kernels' items.
  int64_t weightElements() const { return channels * groupWidth * taps; }
  int64_t gradItems() const { return weightElements() + channels; }
  mlir::RankedTensorType partialsType(attn::CausalConv1DGradOp op) const;
  std::string key() const;
};

mlir::FailureOr<ConvPlan> planCausalConv1d(attn::CausalConv1DOp op,
                                           const TargetOptions &options,
                                           std::string &unsupported);
void buildCausalConv1dKernel(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::gpu::GPUModuleOp module,
                             const ConvPlan &plan);
attn::KernelLaunchAttr describeCausalConv1d(mlir::MLIRContext *ctx,
                                            attn::CausalConv1DOp op,
                                            const ConvPlan &plan);
mlir::FailureOr<ConvPlan> planCausalConv1dGrad(attn::CausalConv1DGradOp op,
                                               const TargetOptions &options,
                                               std::string &unsupported);
/// The input-gradient and the weight-gradient kernels of a gradient plan.
void buildCausalConv1dInputGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::gpu::GPUModuleOp module,
                                      const ConvPlan &plan);
void buildCausalConv1dWeightGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                                       mlir::gpu::GPUModuleOp module,
                                       const ConvPlan &plan);
void buildCausalConv1dWeightSumKernel(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::gpu::GPUModuleOp module,
                                      const ConvPlan &plan);
attn::KernelLaunchAttr describeCausalConv1dInputGrad(
    mlir::MLIRContext *ctx, attn::CausalConv1DGradOp op, const ConvPlan &plan);
attn::KernelLaunchAttr describeCausalConv1dWeightGrad(
    mlir::MLIRContext *ctx, attn::CausalConv1DGradOp op, const ConvPlan &plan);
attn::KernelLaunchAttr describeCausalConv1dWeightSum(mlir::MLIRContext *ctx,
                                                     const ConvPlan &plan);

/// The plan of one attn.qk_mean or attn.qk_mean_grad kernel (`gradient`):
/// one CTA per (token, sequence), threads over its query and key elements.
struct QKMeanPlan : KernelPlan {
  int64_t numHeads, numKvHeads, headDim, group;
  bool gradient = false;
  std::string key() const;
};

mlir::FailureOr<QKMeanPlan> planQKMean(mlir::Operation *op,
                                       const TargetOptions &options,
                                       std::string &unsupported);
void buildQKMeanKernel(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::gpu::GPUModuleOp module, const QKMeanPlan &plan);
attn::KernelLaunchAttr describeQKMean(mlir::MLIRContext *ctx,
                                      mlir::Operation *op,
                                      const QKMeanPlan &plan);

/// The plan of one attn.value_shift or attn.value_shift_grad kernel
/// (`gradient`): one CTA per (token, sequence), threads over its channels.
struct ValueShiftPlan : KernelPlan {
  int64_t channels; // of `current` (the result has twice as many)
  bool gradient = false;
  bool hasState = false;
  std::string key() const;
};

mlir::FailureOr<ValueShiftPlan> planValueShift(mlir::Operation *op,
                                               const TargetOptions &options,
                                               std::string &unsupported);
void buildValueShiftKernel(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::gpu::GPUModuleOp module,
                           const ValueShiftPlan &plan);
attn::KernelLaunchAttr describeValueShift(mlir::MLIRContext *ctx,
                                          mlir::Operation *op,
                                          const ValueShiftPlan &plan);

/// The plan of the attn.qk_norm kernel (one CTA per token and sequence, a
/// warp per head row) or (`gradient`) of the two of attn.qk_norm_grad: the
/// head rows' gradients (and each key row's share of the temperature
/// gradient, an f32 `[B, S, Hk]` workspace), then the temperature gradient
/// summed per key head in a fixed order.
struct QKNormPlan : KernelPlan {
  static constexpr int64_t kMaxWarps = 8;
  static constexpr int64_t kTemperatureThreads = 256;
  int64_t numHeads, numKvHeads, headDim;
  bool clampedTemperature, clampEps;
  double eps;
  bool gradient = false;
  std::string temperatureName; // the gradient's second kernel
  /// The workspace between the gradient's kernels.
  mlir::RankedTensorType sharesType(attn::QKNormGradOp op) const;
  std::string key() const;
};

mlir::FailureOr<QKNormPlan> planQKNorm(attn::QKNormOp op,
                                       const TargetOptions &options,
                                       std::string &unsupported);
void buildQKNormKernel(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::gpu::GPUModuleOp module, const QKNormPlan &plan);
/// Operands (q, k, temp), results (q_out, k_out).
attn::KernelLaunchAttr describeQKNorm(mlir::MLIRContext *ctx, attn::QKNormOp op,
                                      const QKNormPlan &plan);
mlir::FailureOr<QKNormPlan> planQKNormGrad(attn::QKNormGradOp op,
                                           const TargetOptions &options,
                                           std::string &unsupported);
void buildQKNormGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::gpu::GPUModuleOp module,
                           const QKNormPlan &plan);
void buildQKNormTemperatureGradKernel(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::gpu::GPUModuleOp module,
                                      const QKNormPlan &plan);
/// Operands (q, k, temp, q_out_grad, k_out_grad), results (q_grad, k_grad,
/// temp_shares).
attn::KernelLaunchAttr describeQKNormGrad(mlir::MLIRContext *ctx,
                                          attn::QKNormGradOp op,
                                          const QKNormPlan &plan);
/// Operands (temp_shares, temp), result temp_grad.
attn::KernelLaunchAttr describeQKNormTemperatureGrad(mlir::MLIRContext *ctx,
                                                     const QKNormPlan &plan);
/// The head counts and head dim of a `[.., Hq, d]` query-shaped and a
/// `[.., Hk, d]` key-shaped tensor; false, with `unsupported` saying that
/// `kernel` needs them static, when one is dynamic.
bool staticHeads(mlir::RankedTensorType query, mlir::RankedTensorType key,
                 int64_t &numHeads, int64_t &numKvHeads, int64_t &headDim,
                 llvm::StringRef kernel, std::string &unsupported);
/// The key temperature tau of `temp` (f32): itself, or for <clamped>
/// exp(min(max(temp, 1e-7), 2)).
mlir::Value keyTemperature(DeviceBuilder &d, mlir::Value temp, bool clamped);
/// A head's norm n from its squared length: sqrt(|x|^2 + eps), or
/// max(|x|, eps) with `clampEps`.
mlir::Value headNorm(DeviceBuilder &d, mlir::Value squares, bool clampEps,
                     double eps);

/// The plan of one attn.mask_tokens kernel: one CTA per (token, sequence),
/// threads over the row in chunks of `vector` elements.
struct MaskTokensPlan : KernelPlan {
  int64_t width, maskBits, vector;
  std::string key() const;
};

mlir::FailureOr<MaskTokensPlan> planMaskTokens(attn::MaskTokensOp op,
                                               const TargetOptions &options,
                                               std::string &unsupported);
void buildMaskTokensKernel(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::gpu::GPUModuleOp module,
                           const MaskTokensPlan &plan);
attn::KernelLaunchAttr describeMaskTokens(mlir::MLIRContext *ctx,
                                          attn::MaskTokensOp op,
                                          const MaskTokensPlan &plan);

/// One column range of a column copy: input `inputWidth` columns wide, from
/// its column `sourceOffset`, `width` columns.
struct ColumnPiece {
  int64_t inputWidth, sourceOffset, width;
};

/// The plan of a `tensor.concat` on the last dimension (one piece per input,
/// each whole) or a `tensor.extract_slice` of a column range (one piece) of
/// a device program: one thread per chunk of `vector` elements of an output
/// row, copied as `elementBits`-bit integers.
struct ColumnCopyPlan : KernelPlan {
  llvm::SmallVector<ColumnPiece> pieces;
  bool slice = false;
  std::string dtype;        // "bf16", "f16", "f32"
  int64_t elementBits = 16; // of the copied elements
  int64_t vector = 1;
  /// The shape of the dimensions before the columns ("?x?"): the launch
  /// description names its sizes, so each is a kernel of its own.
  std::string leadingShape;
  int64_t outputWidth() const;
  std::string key() const;
};

/// Plans a `tensor.concat` or `tensor.extract_slice`; `unsupported` says why
/// the kernel does not take it.
mlir::FailureOr<ColumnCopyPlan> planColumnCopy(mlir::Operation *op,
                                               std::string &unsupported);
void buildColumnCopyKernel(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::gpu::GPUModuleOp module,
                           const ColumnCopyPlan &plan);
attn::KernelLaunchAttr describeColumnCopy(mlir::MLIRContext *ctx,
                                          mlir::Operation *op,
                                          const ColumnCopyPlan &plan);

/// The plan of an element-wise op on whole tensors of the host program
/// (`arith.addf` of the residual stream): one thread per 16-byte chunk.
struct ElementwisePlan {
  std::string opName; // "add"
  std::string dtype;  // "bf16", "f16", "f32"
  /// The tensors' shape ("?x?x256"): the launch description names its
  /// sizes, so each shape is a kernel of its own.
  std::string shape;
  int64_t vector = 8; // elements per thread (16 bytes)
  int64_t threads = 256;
  std::string name;
  std::string key() const;
};

/// Plans `op` (an `arith.addf` on ranked tensors), reporting unsupported
/// types on `op`.
mlir::FailureOr<ElementwisePlan> planElementwise(mlir::Operation *op);
void buildElementwiseKernel(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::gpu::GPUModuleOp module,
                            const ElementwisePlan &plan);
attn::KernelLaunchAttr describeElementwise(mlir::MLIRContext *ctx,
                                           mlir::Operation *op,
                                           const ElementwisePlan &plan);

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Builds nested attributes for the launch description.
class DictBuilder {
public:
  explicit DictBuilder(mlir::MLIRContext *ctx) : ctx(ctx) {}
  DictBuilder &set(llvm::StringRef name, mlir::Attribute value);
  DictBuilder &set(llvm::StringRef name, llvm::StringRef value);
  DictBuilder &set(llvm::StringRef name, const char *value) {
    return set(name, llvm::StringRef(value));
  }
  DictBuilder &set(llvm::StringRef name, int64_t value);
  DictBuilder &set(llvm::StringRef name, double value);
  DictBuilder &setBool(llvm::StringRef name, bool value);
  mlir::DictionaryAttr get() const;

  mlir::MLIRContext *ctx;
  mlir::NamedAttrList attrs;
};

mlir::Attribute intAttr(mlir::MLIRContext *ctx, int64_t v);
mlir::Attribute strAttr(mlir::MLIRContext *ctx, llvm::StringRef v);
mlir::ArrayAttr arrayAttr(mlir::MLIRContext *ctx,
                          llvm::ArrayRef<mlir::Attribute> values);
mlir::ArrayAttr intArray(mlir::MLIRContext *ctx, llvm::ArrayRef<int64_t> v);
/// `factor * symbol` as an expression attribute (an integer when the symbol
/// is empty).
mlir::Attribute scaled(mlir::MLIRContext *ctx, int64_t factor,
                       llvm::StringRef symbol);
mlir::DictionaryAttr describeTma(mlir::MLIRContext *ctx, const TmaInfo &tma,
                                 ElemKind elem);
/// A kernel launch's identity: the kernel, its kind, what the launch
/// symbols (B, S, T) mean, its block size and dynamic shared memory.
struct LaunchIdentity {
  llvm::StringRef kernel, kind, symbols;
  int64_t threads = 0, sharedBytes = 0;
};
/// The grid and the entries the host binds: parameters, tensors (operands
/// by index, results without), TMA descriptors, RoPE tables, and which
/// results alias which tensors ({result, tensor}: in-place updates).
struct LaunchOperands {
  llvm::ArrayRef<mlir::Attribute> grid, params, tensors,
      tmas = {}, ropeTables = {}, aliases = {};
};
/// Whether the op's tensors are f32 and the host converts them, and what
/// it converts back ("output", "outputs" or a tensor's name).
struct LaunchHostCast {
  bool fromF32 = false;
  llvm::StringRef castBack = "output";
};
/// The kernel that finishes this one's results, and the workspace between.
struct LaunchChain {
  llvm::StringRef then;
  mlir::DictionaryAttr workspace;
};
/// The launch description (the manifest entry) of one kernel.
attn::KernelLaunchAttr describeLaunch(mlir::MLIRContext *ctx,
                                      const LaunchIdentity &identity,
                                      const LaunchOperands &operands,
                                      mlir::DictionaryAttr config,
                                      const LaunchHostCast &hostCast = {},
                                      const LaunchChain &chain = {});
/// One kernel parameter of the launch description: `kind` is
/// "tma_descriptor" (then `detail` names the descriptor), "scalar" or
/// "pointer" (then `detail` is the dtype); `value` says what the host
/// passes (a symbol such as "S"), when it is not an argument buffer.
attn::KernelParamAttr describeParam(mlir::MLIRContext *ctx,
                                    llvm::StringRef name, llvm::StringRef kind,
                                    llvm::StringRef detail,
                                    llvm::StringRef value);
/// The CCA toggles in a prologue kernel's name: `_qkmean`, `_vshift`,
/// `_tclamp`, `_nclamp` (norm = <clamp_eps>) and `_rope<rotated dims>` for
/// those that are on.
std::string ccaKernelNameSuffix(bool qkMean, bool valueShift, bool clamped,
                                bool clampEps, int64_t rotated);

/// The f32 cosine and sine tables `<prefix>_cos` and `<prefix>_sin`
/// (`[positions, rotated / 2]`, `positions` an expression of the launch
/// symbols) of a RoPE with `theta`: appends their pointer parameters to
/// `params` and their descriptions to `tables`.
void describeRopeTables(mlir::MLIRContext *ctx, llvm::StringRef prefix,
                        double theta, int64_t rotated,
                        llvm::StringRef positions,
                        llvm::SmallVectorImpl<mlir::Attribute> &params,
                        llvm::SmallVectorImpl<mlir::Attribute> &tables);
/// Element type of a kernel operand, or failure with a diagnostic.
mlir::FailureOr<ElemKind> kernelElemKind(mlir::Operation *op,
                                         mlir::Type elementType,
                                         const TargetOptions &options,
                                         bool &hostCast);
/// The element width (32 or 64) of the padding or key mask `mask` (named
/// `name`), 0 without one, or failure with a diagnostic on `op`.
mlir::FailureOr<int64_t>
maskElementBits(mlir::Operation *op, llvm::StringRef name, mlir::Value mask);

/// Names the dynamic sizes of a launch description: the batch is `B`; every
/// other dynamic size gets `S`, then `T`, in order of first use, one symbol
/// per meaning. Static sizes stay integers.
class LaunchSymbols {
public:
  explicit LaunchSymbols(mlir::MLIRContext *ctx) : ctx(ctx) {}
  /// `size` as an integer attribute when static, else the symbol of
  /// `meaning` ("batch" is B).
  mlir::Attribute get(int64_t size, llvm::StringRef meaning);
  /// Dimension `dim` of the shaped value `v`.
  mlir::Attribute dim(mlir::Value v, int64_t dim, llvm::StringRef meaning);
  /// "B = batch, S = ..., T = ..." for the symbols in use.
  std::string describe() const;
  /// The meaning that found no free symbol (empty when every size has one).
  std::string overflow;

private:
  mlir::MLIRContext *ctx;
  llvm::SmallVector<std::pair<std::string, std::string>> named;
};
/// The sizes of `shape` for a launch description, appended to `sizes` (the
/// first dynamic one the batch B, the others named by their dimension), and
/// `factor` times their product as an expression ("48*B*S").
std::string describeShape(LaunchSymbols &sym, llvm::ArrayRef<int64_t> shape,
                          int64_t factor,
                          llvm::SmallVectorImpl<mlir::Attribute> &sizes);
/// The text of a size: the integer or the expression.
std::string sizeText(mlir::Attribute size);
/// `factor * size`, folded when the size is static.
mlir::Attribute scaledSize(mlir::MLIRContext *ctx, mlir::Attribute size,
                           int64_t factor);
/// A grid entry of the launch description: {value: n} or {expr: "..."}.
mlir::DictionaryAttr gridEntry(mlir::MLIRContext *ctx, mlir::Attribute size);
/// A tensor entry of the launch description; `operand` is the op operand it
/// is, -1 for a result; `strides` (elements) only where the layout needs
/// them spelled out; `updates` names the tensor a result advances in place.
attn::KernelTensorAttr
describeTensor(mlir::MLIRContext *ctx, llvm::StringRef name,
               llvm::StringRef role, int64_t operand, llvm::StringRef dtype,
               llvm::ArrayRef<mlir::Attribute> shape,
               llvm::ArrayRef<mlir::Attribute> strides = {},
               llvm::StringRef layout = "row-major, contiguous",
               llvm::StringRef updates = "");
/// The manifest dtype of an index operand of `bits` (i32 / i64).
llvm::StringRef indexDtype(int64_t bits);
/// The element width (32 or 64) of an index operand (positions, lengths,
/// block table), or failure with a diagnostic on `op` naming `name`.
mlir::FailureOr<int64_t>
indexElementBits(mlir::Operation *op, llvm::StringRef name, mlir::Value value);
/// Elements per 16-byte (or narrower) vector access dividing all `sizes`.
int64_t vectorWidth(llvm::ArrayRef<int64_t> sizes);
/// The dims per head that `rope` rotates: 0 without a RoPE, -1 when it does
/// not rotate a whole number of them.
int64_t rotatedDims(attn::RopeAttr rope, int64_t headDim);
/// An attention op's softmax scale: `scale`, or 1/sqrt(head dim) without one.
double softmaxScale(mlir::FloatAttr scale, int64_t headDim);

/// Creates `gpu.func @name` with `argTypes` inside `module`, with the
/// launch-bound attributes; `b`'s insertion point is left as it was.
mlir::gpu::GPUFuncOp createKernelFunc(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::gpu::GPUModuleOp module,
                                      llvm::StringRef name,
                                      llvm::ArrayRef<mlir::Type> argTypes,
                                      llvm::ArrayRef<int32_t> tmaArgs,
                                      int64_t threads, int64_t minBlocks);

/// The parameters of a kernel, in order: CUtensorMap descriptors (generic
/// pointers until attn-nvvm-kernel-params passes them by value), global
/// pointers and i32 scalars. `present` false skips a parameter the plan
/// does not pass.
class KernelSignature {
public:
  explicit KernelSignature(mlir::MLIRContext *ctx) : ctx(ctx) {}
  KernelSignature &tma(int64_t count = 1, bool present = true);
  KernelSignature &pointer(int64_t count = 1, bool present = true);
  KernelSignature &scalar(int64_t count = 1, bool present = true);
  llvm::ArrayRef<mlir::Type> types() const { return argTypes; }
  llvm::ArrayRef<int32_t> tmaArgs() const { return tmaIndices; }

private:
  mlir::MLIRContext *ctx;
  llvm::SmallVector<mlir::Type> argTypes;
  llvm::SmallVector<int32_t> tmaIndices;
};

/// A kernel being emitted: creates it (createKernelFunc), keeps `b` at the
/// start of its body while alive and restores it after, and offers a
/// DeviceBuilder there and the arguments in signature order.
class KernelBody {
public:
  KernelBody(mlir::OpBuilder &b, mlir::Location loc,
             mlir::gpu::GPUModuleOp module, llvm::StringRef name,
             const KernelSignature &signature, int64_t threads,
             int64_t minBlocks, ElemKind elem);

private:
  mlir::OpBuilder::InsertionGuard guard;

public:
  mlir::gpu::GPUFuncOp func;
  DeviceBuilder d;
  KernelArguments arguments;
};

/// Register split for a warp-specialized kernel of `1 + consumers`
/// warpgroups at `minBlocks` CTAs per SM: the launch cap and the
/// setmaxnreg targets of the producer and the consumers.
void splitRegisters(int64_t consumers, int64_t minBlocks, int64_t producer,
                    int64_t &cap, int64_t &consumer);

/// Rotates (RoPE, rotate-half pairing) `rows` rows of a 128B-swizzled tile
/// in shared memory, `src` -> `dst` (the same pointer for in place), each row
/// `dim` wide stored as dim/64 column blocks of `rows` x 128 bytes. Row `r`
/// takes its angle from row `position(r)` of the f32 cos/sin tables
/// (`[positions, rotated/2]`). Threads `thread` of `threads` share the work.
void rotateTile(DeviceBuilder &d, Value src, Value dst, int64_t rows,
                int64_t dim, int64_t rotated,
                const std::function<Value(Value)> &position, Value cosTable,
                Value sinTable, Value thread, int64_t threads);

/// Byte offset of the 16-byte chunk `chunk` (of dim/8) of row `row` in a
/// 128B-swizzled tile of `rows` rows.
Value swizzledChunk(DeviceBuilder &d, Value row, Value chunk, int64_t rows);

} // namespace attnfuse::sm90

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_KERNELS_H
