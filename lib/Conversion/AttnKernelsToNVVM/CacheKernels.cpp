//===- CacheKernels.cpp - attn.cache_update / attn.cache_gather -*- C++ -*-===//
//
// Two copy kernels of the KV cache primitives, SIMT with vector loads and
// stores of up to 16 bytes:
//
//  * cache_update: one CTA per (new token t, sequence b) writes
//    new_rows[b, t] (kv_heads * head_dim contiguous elements) at position
//    positions[b] + t of the sequence, for t < clamp(lengths[b], 0, T). The
//    cache is updated in place: the launch's result aliases the cache
//    operand. A position outside the capacity, or a block-table entry that is
//    not a page of the cache, writes nothing (the CPU path reports those as
//    run-time errors).
//  * cache_gather: one CTA per (block-table entry m, sequence b) copies page
//    block_table[b, m] (page_size * kv_heads * head_dim contiguous elements)
//    to rows [m * page_size, (m + 1) * page_size) of the sequence's view; an
//    entry outside [0, num_pages) gives zero rows.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using attn::CacheGatherOp;
using attn::CacheUpdateOp;

namespace {
using Pred = arith::CmpIPredicate;

/// Threads for a copy of `chunks` vectors: whole warps, at most 128.
int64_t copyThreads(int64_t chunks) {
  return std::min<int64_t>(128, std::max<int64_t>(32, (chunks + 31) / 32 * 32));
}

/// `threads` threads copy `chunks` vectors of `vector` elements from `src`
/// to `dst` (element pointers); with `valid` false they write zeros.
void copyVectors(DeviceBuilder &d, Value src, Value dst, int64_t chunks,
                 int64_t vector, int64_t threads, Value valid) {
  Type vecType = d.vec(d.elemType, vector);
  int align = static_cast<int>(2 * vector);
  d.forLoop(
      d.tid(), d.c32(chunks), d.c32(threads), ValueRange(),
      [&](Value chunk, ValueRange) -> SmallVector<Value> {
        Value offset = d.mul(chunk, vector);
        Value value = d.ifThenElseValues(
            valid, vecType,
            [&]() -> SmallVector<Value> {
              return {d.load(vecType, d.gAt(src, offset, d.elemType), align)};
            },
            [&]() -> SmallVector<Value> { return {d.zerosOf(vecType)}; })[0];
        d.store(value, d.gAt(dst, offset, d.elemType), align);
        return {};
      });
}

/// A 64-bit element offset `row * rowElems` of the i64 row `row`.
Value rowOffset(DeviceBuilder &d, Value row, int64_t rowElems) {
  return arith::MulIOp::create(d.b, d.loc, row, d.c64(rowElems));
}

Value cmp64(DeviceBuilder &d, Pred p, Value a, Value b) {
  return arith::CmpIOp::create(d.b, d.loc, p, a, b);
}
} // namespace

//===----------------------------------------------------------------------===//
// attn.cache_update
//===----------------------------------------------------------------------===//

std::string CacheUpdatePlan::key() const {
  return llvm::formatv("cache_update:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}",
                       elemName(elem), paged, pageSize, numKvHeads, headDim,
                       positionBits, lengthBits, tableBits, vector)
      .str();
}

/// The launch symbols of a cache_update, in a fixed order.
static LaunchSymbols cacheUpdateSymbols(MLIRContext *ctx, CacheUpdateOp op,
                                        bool paged) {
  LaunchSymbols sym(ctx);
  sym.dim(op.getNewRows(), 0, "batch");
  sym.dim(op.getNewRows(), 1, "new tokens per sequence");
  if (paged) {
    sym.dim(op.getBlockTable(), 1, "pages per sequence (block_table width)");
    sym.dim(op.getCache(), 0, "pages in the cache");
  } else {
    sym.dim(op.getCache(), 0, "batch");
    sym.dim(op.getCache(), 1, "cache capacity in tokens");
  }
  return sym;
}

FailureOr<CacheUpdatePlan>
attnfuse::sm90::planCacheUpdate(CacheUpdateOp op, const TargetOptions &options,
                                std::string &unsupported) {
  auto cacheType = cast<RankedTensorType>(op.getCache().getType());
  auto newType = cast<RankedTensorType>(op.getNewRows().getType());
  CacheUpdatePlan p;
  if (failed(p.setElementType(op, cacheType.getElementType(), options)))
    return failure();
  if (newType.getElementType() != cacheType.getElementType())
    return op.emitOpError() << "the sm_90a kernel needs new_rows of the "
                               "cache's element type "
                            << cacheType.getElementType() << ", got "
                            << newType.getElementType();
  p.paged = static_cast<bool>(op.getBlockTable());
  p.numKvHeads = newType.getDimSize(2);
  p.headDim = newType.getDimSize(3);
  if (p.paged) {
    p.pageSize = cacheType.getDimSize(1);
    if (ShapedType::isDynamic(p.pageSize)) {
      unsupported = "the sm_90a cache_update kernel needs a static page size";
      return failure();
    }
  }
  FailureOr<int64_t> bits =
      indexElementBits(op, "positions", op.getPositions());
  if (failed(bits))
    return failure();
  p.positionBits = *bits;
  if (op.getLengths()) {
    if (failed(bits = indexElementBits(op, "lengths", op.getLengths())))
      return failure();
    p.lengthBits = *bits;
  }
  if (p.paged) {
    if (failed(bits =
                   indexElementBits(op, "a block_table", op.getBlockTable())))
      return failure();
    p.tableBits = *bits;
  }
  LaunchSymbols sym = cacheUpdateSymbols(op.getContext(), op, p.paged);
  if (!sym.overflow.empty()) {
    unsupported = "the sm_90a cache_update launch names at most two dynamic "
                  "sizes besides the batch; give the " +
                  sym.overflow + " a static size";
    return failure();
  }
  int64_t rowElems = p.numKvHeads * p.headDim;
  p.vector = vectorWidth({rowElems});
  p.threads = copyThreads(rowElems / p.vector);
  p.name = llvm::formatv("attn_cache_update_{0}{1}_h{2}_d{3}", elemName(p.elem),
                         p.paged ? "_paged" : "", p.numKvHeads, p.headDim)
               .str();
  return p;
}

void attnfuse::sm90::buildCacheUpdateKernel(OpBuilder &b, Location loc,
                                            gpu::GPUModuleOp module,
                                            const CacheUpdatePlan &p) {
  // cache, new_rows, positions[, lengths][, block_table], then the capacity
  // (contiguous) or max_pages and num_pages (paged).
  KernelSignature signature(b.getContext());
  signature.pointer(3)
      .pointer(1, p.lengthBits)
      .pointer(1, p.paged)
      .scalar(p.paged ? 2 : 1);
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value cache = arguments.next();
  Value newRows = arguments.next();
  Value positions = arguments.next();
  Value lengths = arguments.nextIf(p.lengthBits);
  Value table = arguments.nextIf(p.paged);
  Value limit = arguments.next(); // capacity or max_pages
  Value numPages = arguments.nextIf(p.paged);

  Value token = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  Value real = tokens;
  if (lengths) {
    Value length = d.loadIndex(lengths, batch, p.lengthBits);
    Value clamped = arith::MaxSIOp::create(
        b, loc, arith::MinSIOp::create(b, loc, length, d.ext64(tokens)),
        d.c64(0));
    real = arith::TruncIOp::create(b, loc, d.i32, clamped);
  }
  int64_t rowElems = p.numKvHeads * p.headDim;
  d.ifThen(d.cmp(Pred::slt, token, real), [&]() {
    Value position = arith::AddIOp::create(
        b, loc, d.loadIndex(positions, batch, p.positionBits), d.ext64(token));
    Value inRange = cmp64(d, Pred::sge, position, d.c64(0));
    Value row;
    if (!p.paged) {
      Value capacity = d.ext64(limit);
      inRange = d.andb(inRange, cmp64(d, Pred::slt, position, capacity));
      row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, d.ext64(batch), capacity),
          position);
    } else {
      Value maxPages = d.ext64(limit);
      Value capacity =
          arith::MulIOp::create(b, loc, maxPages, d.c64(p.pageSize));
      inRange = d.andb(inRange, cmp64(d, Pred::slt, position, capacity));
      // The table is read only for a position inside the capacity.
      Value block = arith::DivSIOp::create(b, loc, position, d.c64(p.pageSize));
      Value entry = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, d.ext64(batch), maxPages),
          block);
      entry = arith::SelectOp::create(b, loc, inRange, entry, d.c64(0));
      Value page = d.loadIndex(table, entry, p.tableBits);
      inRange =
          d.andb(inRange, d.andb(cmp64(d, Pred::sge, page, d.c64(0)),
                                 cmp64(d, Pred::slt, page, d.ext64(numPages))));
      Value slot = arith::RemSIOp::create(b, loc, position, d.c64(p.pageSize));
      row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, page, d.c64(p.pageSize)), slot);
    }
    d.ifThen(inRange, [&]() {
      Value srcRow = d.row64(batch, tokens, token);
      Value src = d.gAt(newRows, rowOffset(d, srcRow, rowElems), d.elemType);
      Value dst = d.gAt(cache, rowOffset(d, row, rowElems), d.elemType);
      copyVectors(d, src, dst, rowElems / p.vector, p.vector, p.threads,
                  d.ctrue());
    });
  });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeCacheUpdate(MLIRContext *ctx, CacheUpdateOp op,
                                    const CacheUpdatePlan &p) {
  StringRef elem = elemName(p.elem);
  LaunchSymbols sym = cacheUpdateSymbols(ctx, op, p.paged);
  Attribute batch = sym.dim(op.getNewRows(), 0, "batch");
  Attribute tokens = sym.dim(op.getNewRows(), 1, "new tokens per sequence");
  Attribute hk = intAttr(ctx, p.numKvHeads), dim = intAttr(ctx, p.headDim);
  SmallVector<Attribute> tensors, params;
  int64_t operand = 0;
  auto add = [&](StringRef name, StringRef role, StringRef dtype,
                 ArrayRef<Attribute> shape) {
    tensors.push_back(describeTensor(ctx, name, role, operand++, dtype, shape));
    params.push_back(describeParam(ctx, name, "pointer", dtype, name));
  };
  Attribute pages, maxPages, capacity;
  if (p.paged) {
    pages = sym.dim(op.getCache(), 0, "pages in the cache");
    maxPages = sym.dim(op.getBlockTable(), 1,
                       "pages per sequence (block_table width)");
    add("cache", "paged cache, updated in place", elem,
        {pages, intAttr(ctx, p.pageSize), hk, dim});
  } else {
    capacity = sym.dim(op.getCache(), 1, "cache capacity in tokens");
    add("cache", "contiguous cache, updated in place", elem,
        {sym.dim(op.getCache(), 0, "batch"), capacity, hk, dim});
  }
  add("new_rows", "the new tokens' rows", elem, {batch, tokens, hk, dim});
  add("positions", "tokens cached per sequence before the update",
      indexDtype(p.positionBits), {batch});
  if (p.lengthBits)
    add("lengths", "real new tokens per sequence (clamped to [0, tokens])",
        indexDtype(p.lengthBits), {batch});
  if (p.paged) {
    add("block_table", "page of each block of page_size tokens",
        indexDtype(p.tableBits), {batch, maxPages});
    params.push_back(
        describeParam(ctx, "max_pages", "scalar", "i32", sizeText(maxPages)));
    params.push_back(
        describeParam(ctx, "num_pages", "scalar", "i32", sizeText(pages)));
  } else {
    params.push_back(
        describeParam(ctx, "capacity", "scalar", "i32", sizeText(capacity)));
  }
  SmallVector<Attribute> grid = {gridEntry(ctx, tokens), gridEntry(ctx, batch)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("num_kv_heads", p.numKvHeads)
      .set("head_dim", p.headDim)
      .setBool("paged", p.paged)
      .set("vector_elements", p.vector)
      .set("out_of_range",
           "a position outside the capacity or a block-table entry outside "
           "[0, num_pages) writes nothing");
  if (p.paged)
    config.set("page_size", p.pageSize);

  std::string symbols = sym.describe();
  Attribute alias =
      DictBuilder(ctx).set("result", "cache_out").set("tensor", "cache").get();
  return describeLaunch(ctx, {p.name, "cache_update", symbols, p.threads},
                        {grid, params, tensors, {}, {}, alias}, config.get(),
                        {p.hostCastFromF32});
}

//===----------------------------------------------------------------------===//
// attn.cache_gather
//===----------------------------------------------------------------------===//

std::string CacheGatherPlan::key() const {
  return llvm::formatv("cache_gather:{0}:{1}:{2}:{3}:{4}:{5}", elemName(elem),
                       pageSize, numKvHeads, headDim, tableBits, vector)
      .str();
}

static LaunchSymbols cacheGatherSymbols(MLIRContext *ctx, CacheGatherOp op) {
  LaunchSymbols sym(ctx);
  sym.dim(op.getBlockTable(), 0, "batch");
  sym.dim(op.getBlockTable(), 1, "pages per sequence (block_table width)");
  sym.dim(op.getCache(), 0, "pages in the cache");
  return sym;
}

FailureOr<CacheGatherPlan>
attnfuse::sm90::planCacheGather(CacheGatherOp op, const TargetOptions &options,
                                std::string &unsupported) {
  auto cacheType = cast<RankedTensorType>(op.getCache().getType());
  CacheGatherPlan p;
  if (failed(p.setElementType(op, cacheType.getElementType(), options)))
    return failure();
  p.pageSize = cacheType.getDimSize(1);
  p.numKvHeads = cacheType.getDimSize(2);
  p.headDim = cacheType.getDimSize(3);
  if (ShapedType::isDynamic(p.pageSize) ||
      ShapedType::isDynamic(p.numKvHeads) || ShapedType::isDynamic(p.headDim)) {
    unsupported = "the sm_90a cache_gather kernel needs a static page size, "
                  "kv head count and head dim";
    return failure();
  }
  FailureOr<int64_t> bits =
      indexElementBits(op, "a block_table", op.getBlockTable());
  if (failed(bits))
    return failure();
  p.tableBits = *bits;
  LaunchSymbols sym = cacheGatherSymbols(op.getContext(), op);
  if (!sym.overflow.empty()) {
    unsupported = "the sm_90a cache_gather launch names at most two dynamic "
                  "sizes besides the batch; give the " +
                  sym.overflow + " a static size";
    return failure();
  }
  int64_t pageElems = p.pageSize * p.numKvHeads * p.headDim;
  p.vector = vectorWidth({pageElems});
  p.threads = copyThreads(pageElems / p.vector);
  p.name = llvm::formatv("attn_cache_gather_{0}_p{1}_h{2}_d{3}",
                         elemName(p.elem), p.pageSize, p.numKvHeads, p.headDim)
               .str();
  return p;
}

void attnfuse::sm90::buildCacheGatherKernel(OpBuilder &b, Location loc,
                                            gpu::GPUModuleOp module,
                                            const CacheGatherPlan &p) {
  // cache, block_table, result, num_pages.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(3).scalar(),
                  p.threads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value cache = arguments.next(), table = arguments.next();
  Value result = arguments.next(), numPages = arguments.next();

  Value block = d.ctaid(0), batch = d.ctaid(1), blocks = d.nctaid(0);
  Value entry = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, d.ext64(batch), d.ext64(blocks)),
      d.ext64(block));
  Value page = d.loadIndex(table, entry, p.tableBits);
  Value valid = d.andb(cmp64(d, Pred::sge, page, d.c64(0)),
                       cmp64(d, Pred::slt, page, d.ext64(numPages)));
  page = arith::SelectOp::create(b, loc, valid, page, d.c64(0));
  int64_t pageElems = p.pageSize * p.numKvHeads * p.headDim;
  Value src = d.gAt(cache, rowOffset(d, page, pageElems), d.elemType);
  Value dst = d.gAt(result, rowOffset(d, entry, pageElems), d.elemType);
  copyVectors(d, src, dst, pageElems / p.vector, p.vector, p.threads, valid);
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeCacheGather(MLIRContext *ctx, CacheGatherOp op,
                                    const CacheGatherPlan &p) {
  StringRef elem = elemName(p.elem);
  LaunchSymbols sym = cacheGatherSymbols(ctx, op);
  Attribute batch = sym.dim(op.getBlockTable(), 0, "batch");
  Attribute width =
      sym.dim(op.getBlockTable(), 1, "pages per sequence (block_table width)");
  Attribute pages = sym.dim(op.getCache(), 0, "pages in the cache");
  Attribute hk = intAttr(ctx, p.numKvHeads), dim = intAttr(ctx, p.headDim);
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "cache", "paged cache", 0, elem,
                     {pages, intAttr(ctx, p.pageSize), hk, dim}),
      describeTensor(ctx, "block_table",
                     "page of each block of page_size tokens", 1,
                     indexDtype(p.tableBits), {batch, width}),
      describeTensor(ctx, "output",
                     "per-sequence view, row j at position j (zeros for "
                     "entries outside [0, num_pages))",
                     -1, elem,
                     {batch, scaledSize(ctx, width, p.pageSize), hk, dim})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "cache", "pointer", elem, "cache"),
      describeParam(ctx, "block_table", "pointer", indexDtype(p.tableBits),
                    "block_table"),
      describeParam(ctx, "output", "pointer", elem, "output"),
      describeParam(ctx, "num_pages", "scalar", "i32", sizeText(pages))};
  SmallVector<Attribute> grid = {gridEntry(ctx, width), gridEntry(ctx, batch)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("page_size", p.pageSize)
      .set("num_kv_heads", p.numKvHeads)
      .set("head_dim", p.headDim)
      .set("vector_elements", p.vector);
  std::string symbols = sym.describe();
  return describeLaunch(ctx, {p.name, "cache_gather", symbols, p.threads},
                        {grid, params, tensors}, config.get(),
                        {p.hostCastFromF32});
}
