//===- AttnAttributes.td - attn dialect attributes ---------*- tablegen -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_TD

include "attnfuse/Dialect/Attn/IR/AttnBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Attn_SharingMode : I32EnumAttr<"SharingMode",
    "how the query, key and value projections are tied", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"kv", 1>,
      I32EnumAttrCase<"qk", 2>,
      I32EnumAttrCase<"qkv", 3>
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnfuse::attn";
}

def Attn_SharingModeAttr : EnumAttr<Attn_Dialect, Attn_SharingMode, "sharing"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_TemperatureMode : I32EnumAttr<"TemperatureMode",
    "how the learned key temperature scales the normalized keys", [
      I32EnumAttrCase<"raw", 0>,
      I32EnumAttrCase<"clamped", 1>
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnfuse::attn";
}

def Attn_TemperatureModeAttr
    : EnumAttr<Attn_Dialect, Attn_TemperatureMode, "temperature"> {
  let assemblyFormat = "`<` $value `>`";
}

// How eps keeps the per-head L2 norm of CCA's query and key heads away from
// zero: `sqrt(|x|^2 + eps)` (the spec's default) or `max(|x|, eps)`
// (Hugging Face transformers' ZAYA, with eps = finfo(dtype).eps).
def Attn_NormMode : I32EnumAttr<"NormMode",
    "how eps enters the L2 norm of a CCA head", [
      I32EnumAttrCase<"sqrt_eps", 0>,
      I32EnumAttrCase<"clamp_eps", 1>
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnfuse::attn";
}

def Attn_NormModeAttr : EnumAttr<Attn_Dialect, Attn_NormMode, "norm"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_RopeAttr : AttrDef<Attn_Dialect, "Rope"> {
  let mnemonic = "rope";
  let summary = "rotary position embedding parameters";
  let description = [{
    NeoX-style (rotate-half) rotary embedding of the first
    `r = fraction * head_dim` dimensions of every head: dimension `i` pairs
    with `i + r/2` for `i < r/2`, with frequency `theta^(-2i/r)` and the
    absolute token index as position. `fraction` defaults to 1 (full
    rotation).

    ```mlir
    #attn.rope<theta = 10000.0>
    #attn.rope<theta = 10000.0, fraction = 0.5>
    ```

    Semantics: docs/semantics.md#rotary-position-embedding
  }];
  let parameters = (ins "::llvm::APFloat":$theta, "::llvm::APFloat":$fraction);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "double":$theta, CArg<"double", "1.0">:$fraction), [{
      return $_get($_ctxt, ::llvm::APFloat(theta), ::llvm::APFloat(fraction));
    }]>
  ];
  let extraClassDeclaration = [{
    /// Number of rotated dimensions of a head of `headDim` dimensions, or
    /// failure when `fraction * headDim` is not an integer.
    ::mlir::FailureOr<int64_t> getRotatedDim(int64_t headDim) const;
    double getThetaValue() const { return getTheta().convertToDouble(); }
    double getFractionValue() const { return getFraction().convertToDouble(); }
  }];
}

//===----------------------------------------------------------------------===//
// Kernel launch descriptions (convert-attn-kernels-to-nvvm)
//===----------------------------------------------------------------------===//

def Attn_KernelParamAttr : AttrDef<Attn_Dialect, "KernelParam"> {
  let mnemonic = "kernel_param";
  let summary = "one parameter of an sm_90a kernel launch";
  let description = [{
    A kernel parameter in the order the kernel takes it: `kind` is
    `tma_descriptor` (a CUtensorMap passed by value as a
    `__grid_constant__`; `detail` names the descriptor), `pointer` or
    `scalar` (`detail` is the element type). `value`, when present, is what
    the host passes: a size symbol such as `S`, or the tensor of that name.

    ```mlir
    #attn.kernel_param<name = "tma_q", kind = "tma_descriptor", detail = "tma_q">
    #attn.kernel_param<name = "seq_q", kind = "scalar", detail = "i32", value = "S">
    ```
  }];
  let parameters = (ins StringRefParameter<"the parameter's name">:$name,
                        StringRefParameter<"tma_descriptor, pointer or scalar">:$kind,
                        StringRefParameter<"descriptor or element type", [{""}]>:$detail,
                        StringRefParameter<"what the host passes", [{""}]>:$value);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_KernelTensorAttr : AttrDef<Attn_Dialect, "KernelTensor"> {
  let mnemonic = "kernel_tensor";
  let summary = "one tensor an sm_90a kernel reads or writes";
  let description = [{
    A tensor of a kernel launch: `operand` is the op operand (and launch
    call operand) it is, -1 for a result the kernel writes into a buffer of
    its own. `shape` (and `strides`, in elements, when given) hold integers
    and expressions of the launch's size symbols (`"B"`, `"S"`, `"4096*S"`).
    A result that `updates` a tensor (a state advanced by one step) may be
    given the same buffer.

    ```mlir
    #attn.kernel_tensor<name = "query", role = "query", operand = 0,
                        dtype = "bf16", shape = ["B", "S", 16, 64],
                        layout = "row-major [batch, seq, heads, dim], contiguous">
    ```
  }];
  let parameters = (ins StringRefParameter<"the tensor's name">:$name,
                        StringRefParameter<"what the kernel uses it for">:$role,
                        "int64_t":$operand,
                        StringRefParameter<"element type">:$dtype,
                        "::mlir::ArrayAttr":$shape,
                        OptionalParameter<"::mlir::ArrayAttr">:$strides,
                        StringRefParameter<"memory layout">:$layout,
                        StringRefParameter<"the tensor a result updates", [{""}]>:$updates);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_KernelLaunchAttr : AttrDef<Attn_Dialect, "KernelLaunch"> {
  let mnemonic = "kernel_launch";
  let summary = "how the host launches one sm_90a kernel";
  let description = [{
    Carried by the host-side launch declarations that
    `convert-attn-kernels-to-nvvm` creates (`attnfuse.launch`), and written
    by `attnfuse-compile` to manifest.json: the kernel, the CTA shape
    (`block`), the grid as functions of the launch's size `symbols`, the
    dynamic shared memory, the parameters (`#attn.kernel_param`), the
    tensors (`#attn.kernel_tensor`), the TMA descriptors the host encodes,
    the RoPE tables it fills, the kernel's configuration, and, for kernels
    that update a tensor in place, which results alias which tensors. A
    kernel whose results another kernel finishes (the split-K decode) names
    it in `then` and describes the `workspace` the host allocates between
    them.
    `host_cast` is set when the op's tensors are f32 and the host converts
    them to the kernel's 16-bit type and back.

    ```mlir
    #attn.kernel_launch<kernel = "attn_ewise_add_bf16", kind = "elementwise",
      symbols = "B = batch, S = dimension 1", block = [256, 1, 1],
      grid = [ {expr = "ceil_div(1024*B*S, 2048)"} ], dynamic_smem_bytes = 0,
      params = [...], tensors = [...], tma_descriptors = [],
      config = {op = "add"}>
    ```
  }];
  let parameters = (ins StringRefParameter<"the kernel's symbol">:$kernel,
                        StringRefParameter<"the kernel family">:$kind,
                        StringRefParameter<"the size symbols' meanings">:$symbols,
                        ArrayRefParameter<"int64_t", "threads per CTA (x, y, z)">:$block,
                        "::mlir::ArrayAttr":$grid,
                        "int64_t":$dynamic_smem_bytes,
                        "::mlir::ArrayAttr":$params,
                        "::mlir::ArrayAttr":$tensors,
                        "::mlir::ArrayAttr":$tma_descriptors,
                        OptionalParameter<"::mlir::ArrayAttr">:$rope_tables,
                        StringRefParameter<"the host's f32 conversion", [{""}]>:$host_cast,
                        OptionalParameter<"::mlir::ArrayAttr">:$aliases,
                        StringRefParameter<"the kernel launched next", [{""}]>:$then,
                        OptionalParameter<"::mlir::DictionaryAttr">:$workspace,
                        "::mlir::DictionaryAttr":$config);
  let assemblyFormat = [{
    `<` `kernel` `=` $kernel `,` `kind` `=` $kind `,` `symbols` `=` $symbols
    `,` `block` `=` `[` $block `]` `,` `grid` `=` $grid
    `,` `dynamic_smem_bytes` `=` $dynamic_smem_bytes `,` `params` `=` $params
    `,` `tensors` `=` $tensors `,` `tma_descriptors` `=` $tma_descriptors `,`
    (`rope_tables` `=` $rope_tables^ `,`)? (`host_cast` `=` $host_cast^ `,`)?
    (`aliases` `=` $aliases^ `,`)? (`then` `=` $then^ `,`)?
    (`workspace` `=` $workspace^ `,`)? `config` `=` $config `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The typed entries of `params` and `tensors` (the verifier checks
    /// them).
    auto getParamList() const {
      return getParams().getAsRange<KernelParamAttr>();
    }
    auto getTensorList() const {
      return getTensors().getAsRange<KernelTensorAttr>();
    }
  }];
}

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_TD
