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

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_TD
