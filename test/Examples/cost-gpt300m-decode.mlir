// The decode form of the 300M K=V GQA-4 model (examples/
// gpt300m_kv_gqa4_decode.mlir): its @step prices one decode step of the 20
// layers over 32768 cached tokens in bf16, with the same cache as the
// prefill model (cost-gpt300m.mlir): Hk d = 256 values (512 B) per token and
// layer, 20 * 32768 * 512 B = 335544320 B (336 MB) per sequence vs 2.684 GB
// for MHA (8x, 87.5% less). Step FLOPs by hand: attention 4 * 32768 keys *
// 16 heads * 64 * 20 layers = 2684354560 (2.68 G); projections 2 * (1024^2
// + 256 * 1024 + 1024^2) * 20 = 94371840 (94.4 M).

// RUN: attnfuse-opt %examples/gpt300m_kv_gqa4_decode.mlir \
// RUN:   --attn-cost-report=function=step -o /dev/null | FileCheck %s
// CHECK: attn-cost-report: 20 attention layers, 32768 tokens per sequence, batch 1
// CHECK: 0 qkv_decode <kv> 1024 16/4 64 256 (512 B) 0 B 2.36 M 134 M 4.72 M 8x, 87.5% less
// CHECK: kv cache per sequence: 336 MB vs 2.684 GB (MHA) per sequence at 32768 tokens in bf16 (8x smaller, 87.5% less)
// CHECK: decode-step FLOPs: 2.78 G (attention 2.68 G, projections 94.4 M)

// RUN: attnfuse-opt %examples/gpt300m_kv_gqa4_decode.mlir \
// RUN:   --attn-cost-report="function=step format=json" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=JSON
// JSON: "decode_step": true
// JSON: "total": {
// JSON: "bytes_per_sequence": 335544320
// JSON: "attention_flops": 2684354560
// JSON: "projection_flops": 94371840

// RUN: not attnfuse-opt %examples/gpt300m_kv_gqa4_decode.mlir \
// RUN:   --attn-cost-report=function=decode -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// MISSING: error: attn-cost-report: no function 'decode' in the module
