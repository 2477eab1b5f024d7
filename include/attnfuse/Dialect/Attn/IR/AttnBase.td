//===- AttnBase.td - attn dialect definition ---------------*- tablegen -*-===//
//
// The attn dialect: efficient-attention layers (projection sharing with
// GQA/MQA, compressed convolutional attention) and the primitives they
// decompose into.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNBASE_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNBASE_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::attnfuse::attn";
  let summary = "Efficient attention layers and their primitives";
  let description = [{
    The `attn` dialect expresses two families of attention on tensors with
    value semantics:

    * projection sharing (`attn.qkv_attention`): the query, key and value
      projections tied in the four ways `none`, `kv`, `qk` and `qkv`,
      composed with grouped-query (GQA) and multi-query (MQA) head sharing;
    * compressed convolutional attention (`attn.cca`): CCA and CCGQA, where
      attention runs in a latent space after a down-projection and causal
      convolutions.

    Layer ops decompose (`attn-decompose`) into primitives: `attn.project`,
    `attn.causal_conv1d`, `attn.qk_mean`, `attn.qk_norm`, `attn.value_shift`,
    `attn.rope` and `attn.sdpa`.

    Conventions shared by every op:
    * activations are `[batch, seq, ...]`; batch and sequence may be dynamic,
      widths, head counts and head dims are static;
    * per-head tensors are `[batch, seq, heads, head_dim]`;
    * linear weights use the `torch.nn.Linear` layout `[out_features,
      in_features]` (`y = x W^T + b`), convolution weights the
      `torch.nn.Conv1d` layout `[out_channels, in_channels / groups, kernel]`;
    * query head `h` reads key/value head `h / (num_heads / num_kv_heads)`.

    The exact semantics of every op: docs/semantics.md.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNBASE_TD
