// The hand check for the 1.2B configuration (E 2048, 32 heads x 64,
// 22 layers) at 32768 tokens in bf16 (docs/semantics.md#cost-model):
//   MHA caches K and V: 2 * 32 * 64 = 4096 values = 8192 B per token and
//   layer; 22 layers: 180224 B per token; * 32768 = 5905580032 B = 5.906 GB.
//   K=V + MQA caches one head: 64 values = 128 B per token and layer;
//   22 layers: 2816 B per token; * 32768 = 92274688 B = 92.3 MB.
//   4096 / 64 = 64x smaller, 1 - 1/64 = 98.4375% less.

// RUN: attnfuse-opt %examples/gpt1b2_kv_mqa.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s
// RUN: attnfuse-opt %examples/gpt1b2_kv_mqa.mlir --attn-cost-report=format=json \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: attnfuse-opt %examples/gpt1b2_mha.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=MHA
// RUN: attnfuse-opt %examples/gpt1b2_mha.mlir --attn-cost-report=format=json \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=MHA-JSON

// CHECK:       attn-cost-report: 22 attention layers, 32768 tokens per sequence, batch 1
// CHECK-COUNT-22: qkv_attention <kv> 2048 32/1 64 64 (128 B) 0 B 8.52 M {{.*}} 64x, 98.438% less
// CHECK-NOT:   qkv_attention
// CHECK:       total over 22 layers (bf16):
// CHECK-NEXT:    kv cache per token: 2.816 kB vs 180 kB (MHA)
// CHECK-NEXT:    per-sequence state: 0 B
// CHECK-NEXT:    kv cache per sequence: 92.3 MB vs 5.906 GB (MHA) per sequence at 32768 tokens in bf16 (64x smaller, 98.438% less)

// Exact bytes; per layer 128 B * 32768 = 4194304 B vs 8192 B * 32768.
// JSON:      "cache_values_per_token": 64,
// JSON-NEXT: "cache_bytes_per_token": 128,
// JSON:      "bytes_per_sequence": 4194304,
// JSON-NEXT: "mha_cache_values_per_token": 4096,
// JSON-NEXT: "mha_bytes_per_sequence": 268435456,
// JSON-NEXT: "cache_reduction_vs_mha": 0.984375,
// JSON:      "total": {
// JSON-NEXT:   "layers": 22,
// JSON-NEXT:   "cache_bytes_per_token": 2816,
// JSON-NEXT:   "mha_cache_bytes_per_token": 180224,
// JSON-NEXT:   "state_bytes_per_sequence": 0,
// JSON-NEXT:   "bytes_per_sequence": 92274688,
// JSON-NEXT:   "mha_bytes_per_sequence": 5905580032,

// The MHA baseline caches exactly what the reference MHA caches: 5.906 GB.
// MHA:       attn-cost-report: 22 attention layers, 32768 tokens per sequence, batch 1
// MHA-COUNT-22: qkv_attention <none> 2048 32/32 64 4096 (8.192 kB) 0 B {{.*}} 1x, 0% less
// MHA:       total over 22 layers (bf16):
// MHA-NEXT:    kv cache per token: 180 kB vs 180 kB (MHA)
// MHA-NEXT:    per-sequence state: 0 B
// MHA-NEXT:    kv cache per sequence: 5.906 GB vs 5.906 GB (MHA) per sequence at 32768 tokens in bf16 (1x smaller, 0% less)

// MHA-JSON:      "total": {
// MHA-JSON-NEXT:   "layers": 22,
// MHA-JSON-NEXT:   "cache_bytes_per_token": 180224,
// MHA-JSON-NEXT:   "mha_cache_bytes_per_token": 180224,
// MHA-JSON-NEXT:   "state_bytes_per_sequence": 0,
// MHA-JSON-NEXT:   "bytes_per_sequence": 5905580032,
// MHA-JSON-NEXT:   "mha_bytes_per_sequence": 5905580032,
