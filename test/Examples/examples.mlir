// The shipped example models are what examples/generate.py writes, and each
// parses, verifies and decomposes into primitive attn ops (one attn.sdpa per
// layer, no layer op left).

// RUN: %python %examples/generate.py --check
// RUN: attnfuse-opt %examples/gpt300m_none.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT300M-NONE \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt300m_kv.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT300M-KV \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt300m_qk.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT300M-QK \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt300m_qkv.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT300M-QKV \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt300m_kv_gqa4.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT300M-KV-GQA4 \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt300m_kv_mqa.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT300M-KV-MQA \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt1b2_kv_mqa.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT1B2-KV-MQA \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/gpt1b2_mha.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=GPT1B2-MHA \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca
// RUN: attnfuse-opt %examples/zaya1_ccgqa.mlir --attn-decompose --canonicalize \
// RUN:   | FileCheck %s --check-prefix=ZAYA1-CCGQA \
// RUN:     --implicit-check-not=attn.qkv_attention --implicit-check-not=attn.cca

// GPT300M-NONE-LABEL: func.func @model(
// GPT300M-NONE-COUNT-20: attn.sdpa
// GPT300M-NONE-NOT: attn.sdpa

// GPT300M-KV-LABEL: func.func @model(
// GPT300M-KV-COUNT-20: attn.sdpa
// GPT300M-KV-NOT: attn.sdpa

// GPT300M-QK-LABEL: func.func @model(
// GPT300M-QK-COUNT-20: attn.sdpa
// GPT300M-QK-NOT: attn.sdpa

// GPT300M-QKV-LABEL: func.func @model(
// GPT300M-QKV-COUNT-20: attn.sdpa
// GPT300M-QKV-NOT: attn.sdpa

// GPT300M-KV-GQA4-LABEL: func.func @model(
// GPT300M-KV-GQA4-COUNT-20: attn.sdpa
// GPT300M-KV-GQA4-NOT: attn.sdpa

// GPT300M-KV-MQA-LABEL: func.func @model(
// GPT300M-KV-MQA-COUNT-20: attn.sdpa
// GPT300M-KV-MQA-NOT: attn.sdpa

// GPT1B2-KV-MQA-LABEL: func.func @model(
// GPT1B2-KV-MQA-COUNT-22: attn.sdpa
// GPT1B2-KV-MQA-NOT: attn.sdpa

// GPT1B2-MHA-LABEL: func.func @model(
// GPT1B2-MHA-COUNT-22: attn.sdpa
// GPT1B2-MHA-NOT: attn.sdpa

// ZAYA1-CCGQA-LABEL: func.func @model(
// ZAYA1-CCGQA-COUNT-40: attn.sdpa
// ZAYA1-CCGQA-NOT: attn.sdpa

