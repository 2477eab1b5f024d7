// The hand checks for the paper's 300M configuration (E 1024,
// 16 heads x 64, 20 layers; docs/semantics.md#cost-model), in every sharing mode, at the
// default 32768 tokens in bf16. Cache values per token and layer:
//   multi-head (and none, qk)  2 Hk d = 2 * 16 * 64 = 2048 (4096 B);
//   kv, qkv                    Hk d = 1024 (2048 B), 2x, 50% less;
//   kv with GQA-4              Hk d = 4 * 64 = 256, 8x, 87.5% less;
//   kv with multi-query        Hk d = 64, 32x, 96.875% less.
// Per sequence, 20 layers * 32768 tokens * 2 B = 1310720 B per value:
//   2048 -> 2684354560 B (2.684 GB), 1024 -> 1342177280 B (1.342 GB),
//   256 -> 335544320 B (336 MB), 64 -> 83886080 B (83.9 MB).

// RUN: attnfuse-opt %examples/gpt300m_none.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=NONE
// RUN: attnfuse-opt %examples/gpt300m_kv.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=KV
// RUN: attnfuse-opt %examples/gpt300m_qk.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=QK
// RUN: attnfuse-opt %examples/gpt300m_qkv.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=QKV
// RUN: attnfuse-opt %examples/gpt300m_kv_gqa4.mlir --attn-cost-report \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=GQA4
// RUN: attnfuse-opt %examples/gpt300m_kv_mqa.mlir --attn-cost-report \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=MQA

// The exact reductions and bytes, from the JSON report.
// RUN: attnfuse-opt %examples/gpt300m_none.mlir \
// RUN:   --attn-cost-report=format=json -o /dev/null \
// RUN:   | FileCheck %s --check-prefixes=JSON,NONE-JSON
// RUN: attnfuse-opt %examples/gpt300m_kv.mlir \
// RUN:   --attn-cost-report=format=json -o /dev/null \
// RUN:   | FileCheck %s --check-prefixes=JSON,KV-JSON
// RUN: attnfuse-opt %examples/gpt300m_qk.mlir \
// RUN:   --attn-cost-report=format=json -o /dev/null \
// RUN:   | FileCheck %s --check-prefixes=JSON,QK-JSON
// RUN: attnfuse-opt %examples/gpt300m_qkv.mlir \
// RUN:   --attn-cost-report=format=json -o /dev/null \
// RUN:   | FileCheck %s --check-prefixes=JSON,QKV-JSON
// RUN: attnfuse-opt %examples/gpt300m_kv_gqa4.mlir \
// RUN:   --attn-cost-report=format=json -o /dev/null \
// RUN:   | FileCheck %s --check-prefixes=JSON,GQA4-JSON
// RUN: attnfuse-opt %examples/gpt300m_kv_mqa.mlir \
// RUN:   --attn-cost-report=format=json -o /dev/null \
// RUN:   | FileCheck %s --check-prefixes=JSON,MQA-JSON

// Parameters per layer (weights [out, in] and biases):
//   none 4 * 1024^2 + 4 * 1024 = 4198400; kv and qk 3 * 1024^2 + 3 * 1024
//   = 3148800; qkv 2 * 1024^2 + 2 * 1024 = 2099200; GQA-4 2 * 1024^2
//   + 256 * 1024 + 2 * 1024 + 256 = 2361600; MQA 2 * 1024^2 + 64 * 1024
//   + 2 * 1024 + 64 = 2164800.

// NONE:       attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// NONE-COUNT-20: qkv_attention <none> 1024 16/16 64 2048 (4.096 kB) 0 B 4.2 M {{.*}} 1x, 0% less
// NONE:       kv cache per sequence: 2.684 GB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (1x smaller, 0% less)

// KV:         attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// KV-COUNT-20: qkv_attention <kv> 1024 16/16 64 1024 (2.048 kB) 0 B 3.15 M {{.*}} 2x, 50% less
// KV:         kv cache per sequence: 1.342 GB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (2x smaller, 50% less)

// QK:         attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// QK-COUNT-20: qkv_attention <qk> 1024 16/16 64 2048 (4.096 kB) 0 B 3.15 M {{.*}} 1x, 0% less
// QK:         kv cache per sequence: 2.684 GB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (1x smaller, 0% less)

// QKV:        attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// QKV-COUNT-20: qkv_attention <qkv> 1024 16/16 64 1024 (2.048 kB) 0 B 2.1 M {{.*}} 2x, 50% less
// QKV:        kv cache per sequence: 1.342 GB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (2x smaller, 50% less)

// GQA4:       attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// GQA4-COUNT-20: qkv_attention <kv> 1024 16/4 64 256 (512 B) 0 B 2.36 M {{.*}} 8x, 87.5% less
// GQA4:       kv cache per sequence: 336 MB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (8x smaller, 87.5% less)

// MQA:        attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// MQA-COUNT-20: qkv_attention <kv> 1024 16/1 64 64 (128 B) 0 B 2.16 M {{.*}} 32x, 96.875% less
// MQA:        kv cache per sequence: 83.9 MB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (32x smaller, 96.875% less)

// NONE-JSON:  "cache_values_per_token": 2048,
// KV-JSON:    "cache_values_per_token": 1024,
// QK-JSON:    "cache_values_per_token": 2048,
// QKV-JSON:   "cache_values_per_token": 1024,
// GQA4-JSON:  "cache_values_per_token": 256,
// MQA-JSON:   "cache_values_per_token": 64,
// JSON:       "mha_cache_values_per_token": 2048,
// JSON-NEXT:  "mha_bytes_per_sequence": 134217728,
// NONE-JSON-NEXT: "cache_reduction_vs_mha": 0,
// KV-JSON-NEXT:   "cache_reduction_vs_mha": 0.5,
// QK-JSON-NEXT:   "cache_reduction_vs_mha": 0,
// QKV-JSON-NEXT:  "cache_reduction_vs_mha": 0.5,
// GQA4-JSON-NEXT: "cache_reduction_vs_mha": 0.875,
// MQA-JSON-NEXT:  "cache_reduction_vs_mha": 0.96875,
// NONE-JSON-NEXT: "parameters": 4198400,
// KV-JSON-NEXT:   "parameters": 3148800,
// QK-JSON-NEXT:   "parameters": 3148800,
// QKV-JSON-NEXT:  "parameters": 2099200,
// GQA4-JSON-NEXT: "parameters": 2361600,
// MQA-JSON-NEXT:  "parameters": 2164800,
// JSON:       "total": {
// JSON-NEXT:    "layers": 20,
// JSON:         "mha_cache_bytes_per_token": 81920,
// JSON-NEXT:    "state_bytes_per_sequence": 0,
// NONE-JSON-NEXT: "bytes_per_sequence": 2684354560,
// KV-JSON-NEXT:   "bytes_per_sequence": 1342177280,
// QK-JSON-NEXT:   "bytes_per_sequence": 2684354560,
// QKV-JSON-NEXT:  "bytes_per_sequence": 1342177280,
// GQA4-JSON-NEXT: "bytes_per_sequence": 335544320,
// MQA-JSON-NEXT:  "bytes_per_sequence": 83886080,
// JSON-NEXT:    "mha_bytes_per_sequence": 2684354560,
