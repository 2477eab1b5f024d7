// The hand check for the ZAYA1-shaped CCGQA stack (E 2048, Hq 8,
// Hk 2, d 128; docs/semantics.md#attncca and #cost-model), at the default 32768 tokens in bf16:
//   cache: post-RoPE k and value-shifted v, 2 Hk d = 2 * 2 * 128 = 512
//   values (1024 B) per token and layer; a 16-head MHA layer of the same
//   width caches 2 E = 4096: 8x smaller, 87.5% less.
//   state: Lq = 8 * 128 = 1024, Lk = 2 * 128 = 256, P = (2-1) + (2-1) = 2:
//   P (Lq + Lk) + Lk/2 = 2 * (1024 + 256) + 128 = 2688 values (5376 B) per
//   sequence and layer.
//   per sequence and layer: 1024 B * 32768 + 5376 B = 33559808 B.
//   attention: 32768 * 32769 / 2 = 536887296 causal pairs,
//   4 * pairs * Lq = 2199090364416 FLOPs, half of a 16 x 128-head layer's
//   (E / Lq = 2).

// RUN: attnfuse-opt %examples/zaya1_ccgqa.mlir --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s
// RUN: attnfuse-opt %examples/zaya1_ccgqa.mlir --attn-cost-report=format=json \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=JSON

// CHECK:       attn-cost-report: [[N:[0-9]+]] attention layers, 32768 tokens per sequence, batch 1
// CHECK:       0 cca 2048 8/2 128 512 (1.024 kB) 5.376 kB {{.*}} 8x, 87.5% less
// CHECK:       total over [[N]] layers (bf16):

// JSON:      "op": "cca",
// JSON-NEXT: "element_type": "bf16",
// JSON-NEXT: "element_bytes": 2,
// JSON-NEXT: "model_width": 2048,
// JSON-NEXT: "num_heads": 8,
// JSON-NEXT: "num_kv_heads": 2,
// JSON-NEXT: "head_dim": 128,
// JSON-NEXT: "causal": true,
// JSON-NEXT: "cache_values_per_token": 512,
// JSON-NEXT: "cache_bytes_per_token": 1024,
// JSON-NEXT: "cached_tokens_per_sequence": 32768,
// JSON-NEXT: "state_values_per_sequence": 2688,
// JSON-NEXT: "state_bytes_per_sequence": 5376,
// JSON-NEXT: "bytes_per_sequence": 33559808,
// JSON-NEXT: "mha_cache_values_per_token": 4096,
// JSON-NEXT: "mha_bytes_per_sequence": 268435456,
// JSON-NEXT: "cache_reduction_vs_mha": 0.875,
// JSON:      "attention_pairs": 536887296,
// JSON-NEXT: "attention_flops": 2199090364416,
