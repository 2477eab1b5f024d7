// Tests of the attn-cost-report pass on small hand-written layers. Every
// figure below is computed by hand (docs/semantics.md#cost-model):
//   cache values per token: none/qk 2 Hk d, kv/qkv Hk d, cca 2 Hk d;
//   attention FLOPs = 4 * pairs * Hq * d * batch, with pairs
//     S^2 (non-causal), S(S+1)/2 (causal),
//     w(w+1)/2 + (S-w)w (causal, window w),
//     S^2 - (S-w)(S-w+1)/2 (non-causal, window w: i - j < w only);
//   projection FLOPs = 2 * (weights of the distinct matrices) * S * batch.

// Text report with the sequence and batch taken from the static IR shapes.
// RUN: attnfuse-opt %s --split-input-file --attn-cost-report -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=TEXT

// The same as JSON.
// RUN: attnfuse-opt %s --split-input-file --attn-cost-report=format=json \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=JSON

// seq-len and batch override the static shapes.
// RUN: attnfuse-opt %s --split-input-file \
// RUN:   --attn-cost-report="seq-len=64 batch=3 format=json" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=OPT

// elem-type changes the bytes, nothing else.
// RUN: attnfuse-opt %s --split-input-file \
// RUN:   --attn-cost-report="elem-type=f32 format=json" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=F32
// RUN: attnfuse-opt %s --split-input-file \
// RUN:   --attn-cost-report="elem-type=f16 format=json" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=F16
// RUN: attnfuse-opt %s --split-input-file \
// RUN:   --attn-cost-report="elem-type=bf16 format=json" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=BF16
// RUN: attnfuse-opt %s --split-input-file \
// RUN:   --attn-cost-report="elem-type=fp8 format=json" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=FP8
// RUN: attnfuse-opt %s --split-input-file --attn-cost-report=elem-type=fp8 \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=FP8-TEXT

// The IR is left unchanged.
// RUN: attnfuse-opt %s --split-input-file -o %t.before
// RUN: attnfuse-opt %s --split-input-file --attn-cost-report -o %t.after \
// RUN:   > /dev/null
// RUN: diff %t.before %t.after

// Errors.
// RUN: not attnfuse-opt %s --split-input-file --attn-cost-report=format=xml \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-FORMAT
// RUN: sed -n 's|^// MIXED-IR: ||p' %s \
// RUN:   | not attnfuse-opt --attn-cost-report=elem-type=int4 -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERR-ELEM
// RUN: not attnfuse-opt %s --split-input-file --attn-cost-report=seq-len=0 \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-SEQ
// RUN: not attnfuse-opt %s --split-input-file --attn-cost-report=batch=-2 \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-BATCH
// The module in MIXED-IR comments below runs two layers at different static
// lengths: without seq-len they cannot be priced alike.
// RUN: sed -n 's|^// MIXED-IR: ||p' %s \
// RUN:   | not attnfuse-opt --attn-cost-report -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERR-MIXED
// RUN: sed -n 's|^// MIXED-IR: ||p' %s \
// RUN:   | attnfuse-opt --attn-cost-report=seq-len=10 -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=MIXED

// ERR-FORMAT: error: attn-cost-report: unknown format 'xml', expected 'text' or 'json'
// ERR-ELEM: error: attn-cost-report: unknown elem-type 'int4', expected f32, f16, bf16 or fp8
// Reported once for the module, not once per layer.
// ERR-ELEM-NOT: error:
// ERR-SEQ: error: attn-cost-report: seq-len and batch must be positive, got 0 and 1
// ERR-BATCH: error: attn-cost-report: seq-len and batch must be positive, got 32768 and -2

// MIXED-IR: func.func @mixed(%a: tensor<1x8x64xf32>, %b: tensor<1x16x64xf32>,
// MIXED-IR:     %wk: tensor<64x64xf32>, %wo: tensor<64x64xf32>)
// MIXED-IR:     -> (tensor<1x8x64xf32>, tensor<1x16x64xf32>) {
// MIXED-IR:   %0 = attn.qkv_attention <qkv> %a wk(%wk) wo(%wo)
// MIXED-IR:       {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64}
// MIXED-IR:       : (tensor<1x8x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
// MIXED-IR:       -> tensor<1x8x64xf32>
// MIXED-IR:   %1 = attn.qkv_attention <qkv> %b wk(%wk) wo(%wo)
// MIXED-IR:       {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64}
// MIXED-IR:       : (tensor<1x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
// MIXED-IR:       -> tensor<1x16x64xf32>
// MIXED-IR:   return %0, %1 : tensor<1x8x64xf32>, tensor<1x16x64xf32>
// MIXED-IR: }
// ERR-MIXED: error: attn-cost-report: layer runs 1 x 16 tokens but an earlier one 1 x 8; pass seq-len and batch to price them alike
// With seq-len=10 both are priced at 10 tokens: 10^2 = 100 pairs each,
// 4 * 100 * 64 = 25600 attention FLOPs; params 2 * 64^2 = 8192, projection
// FLOPs 2 * 8192 * 10 = 163840.
// MIXED: attn-cost-report: 2 attention layers, 10 tokens per sequence, batch 1
// MIXED: 0 qkv_attention <qkv> 64 1/1 64 64 (256 B) 0 B 8.19 k 25.6 k 164 k 2x, 50% less
// MIXED: 1 qkv_attention <qkv> 64 1/1 64 64 (256 B) 0 B 8.19 k 25.6 k 164 k 2x, 50% less

// The first chunk (this header: only comments) is an empty module: no
// layers, the default sequence and batch.
// TEXT: attn-cost-report: 0 attention layers, 32768 tokens per sequence, batch 1
// TEXT-NOT: total over
// JSON: "seq_len": 32768,
// JSON-NEXT: "batch": 1,
// JSON-NEXT: "layers": [],
// JSON-NEXT: "total": {
// JSON-NEXT:   "layers": 0,
// OPT:      "seq_len": 64,
// OPT-NEXT: "batch": 3,
// OPT-NEXT: "layers": [],

// -----

// K=V with GQA (Hq 4, Hk 1, d 64), causal, biases; static batch 2, S 128, f32.
//   cache: Hk d = 64 values/token = 256 B; MHA 2 E = 512 values: 8x, 87.5%.
//   per sequence: 256 B * 128 = 32768 B; MHA 2048 B * 128 = 262144 B.
//   params: wq 256*256 + wk 64*256 + wo 256*256 + bq 256 + bk 64 + bo 256
//         = 65536 + 16384 + 65536 + 576 = 148032.
//   pairs: 128*129/2 = 8256; attention FLOPs 4 * 8256 * 4*64 * 2 = 16908288.
//   projection FLOPs: 2 * (65536 + 16384 + 65536) * 128 * 2 = 75497472.
//   seq-len=64 batch=3: pairs 64*65/2 = 2080, 4 * 2080 * 256 * 3 = 6389760;
//   projections 2 * 147456 * 64 * 3 = 56623104; 256 B * 64 = 16384 B.
func.func @kv_gqa_causal(%x: tensor<2x128x256xf32>, %wq: tensor<256x256xf32>,
                         %wk: tensor<64x256xf32>, %wo: tensor<256x256xf32>,
                         %bq: tensor<256xf32>, %bk: tensor<64xf32>,
                         %bo: tensor<256xf32>) -> tensor<2x128x256xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bq(%bq) bk(%bk) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, causal}
      : (tensor<2x128x256xf32>, tensor<256x256xf32>, tensor<64x256xf32>,
         tensor<256x256xf32>, tensor<256xf32>, tensor<64xf32>, tensor<256xf32>)
      -> tensor<2x128x256xf32>
  return %y : tensor<2x128x256xf32>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 128 tokens per sequence, batch 2
// TEXT-NEXT:  layer op width heads d cache/token state/seq params attn FLOP proj FLOP vs MHA cache
// TEXT-NEXT:  0 qkv_attention <kv> 256 4/1 64 64 (256 B) 0 B 148 k 16.9 M 75.5 M 8x, 87.5% less
// TEXT-NEXT:  total over 1 layers (f32):
// TEXT-NEXT:    kv cache per token: 256 B vs 2.048 kB (MHA)
// TEXT-NEXT:    per-sequence state: 0 B
// TEXT-NEXT:    kv cache per sequence: 32.8 kB vs 262 kB (MHA) per sequence at 128 tokens in f32 (8x smaller, 87.5% less)
// TEXT-NEXT:    kv cache per batch: 65.5 kB for 2 sequences
// TEXT-NEXT:    parameters: 148 k
// TEXT-NEXT:    prefill FLOPs: 92.4 M (attention 16.9 M, projections 75.5 M)

// JSON-LABEL: "seq_len": 128,
// JSON-NEXT:  "batch": 2,
// JSON:       "op": "qkv_attention <kv>",
// JSON-NEXT:  "element_type": "f32",
// JSON-NEXT:  "element_bytes": 4,
// JSON-NEXT:  "model_width": 256,
// JSON-NEXT:  "num_heads": 4,
// JSON-NEXT:  "num_kv_heads": 1,
// JSON-NEXT:  "head_dim": 64,
// JSON-NEXT:  "causal": true,
// JSON-NEXT:  "cache_values_per_token": 64,
// JSON-NEXT:  "cache_bytes_per_token": 256,
// JSON-NEXT:  "cached_tokens_per_sequence": 128,
// JSON-NEXT:  "state_values_per_sequence": 0,
// JSON-NEXT:  "state_bytes_per_sequence": 0,
// JSON-NEXT:  "bytes_per_sequence": 32768,
// JSON-NEXT:  "mha_cache_values_per_token": 512,
// JSON-NEXT:  "mha_bytes_per_sequence": 262144,
// JSON-NEXT:  "cache_reduction_vs_mha": 0.875,
// JSON-NEXT:  "parameters": 148032,
// JSON-NEXT:  "attention_pairs": 8256,
// JSON-NEXT:  "attention_flops": 16908288,
// JSON-NEXT:  "projection_flops": 75497472,
// JSON-NEXT:  "other_flops": 0
// JSON:       "total": {
// JSON-NEXT:    "layers": 1,
// JSON-NEXT:    "cache_bytes_per_token": 256,
// JSON-NEXT:    "mha_cache_bytes_per_token": 2048,
// JSON-NEXT:    "state_bytes_per_sequence": 0,
// JSON-NEXT:    "bytes_per_sequence": 32768,
// JSON-NEXT:    "mha_bytes_per_sequence": 262144,
// JSON-NEXT:    "parameters": 148032,
// JSON-NEXT:    "attention_flops": 16908288,
// JSON-NEXT:    "projection_flops": 75497472,
// JSON-NEXT:    "other_flops": 0

// OPT-LABEL: "op": "qkv_attention <kv>",
// OPT:       "cached_tokens_per_sequence": 64,
// OPT:       "bytes_per_sequence": 16384,
// OPT:       "attention_pairs": 2080,
// OPT-NEXT:  "attention_flops": 6389760,
// OPT-NEXT:  "projection_flops": 56623104,

// Element sizes 4, 2, 2, 1: cache bytes per token 256, 128, 128, 64; per
// sequence (128 tokens) 32768, 16384, 16384, 8192 B. FLOPs do not change.
// F32-LABEL:  "op": "qkv_attention <kv>",
// F32-NEXT:   "element_type": "f32",
// F32-NEXT:   "element_bytes": 4,
// F32:        "cache_bytes_per_token": 256,
// F32:        "bytes_per_sequence": 32768,
// F32:        "attention_flops": 16908288,
// F16-LABEL:  "op": "qkv_attention <kv>",
// F16-NEXT:   "element_type": "f16",
// F16-NEXT:   "element_bytes": 2,
// F16:        "cache_bytes_per_token": 128,
// F16:        "bytes_per_sequence": 16384,
// F16:        "attention_flops": 16908288,
// BF16-LABEL: "op": "qkv_attention <kv>",
// BF16-NEXT:  "element_type": "bf16",
// BF16-NEXT:  "element_bytes": 2,
// BF16:       "cache_bytes_per_token": 128,
// BF16:       "bytes_per_sequence": 16384,
// BF16:       "attention_flops": 16908288,
// FP8-LABEL:  "op": "qkv_attention <kv>",
// FP8-NEXT:   "element_type": "fp8",
// FP8-NEXT:   "element_bytes": 1,
// FP8:        "cache_bytes_per_token": 64,
// FP8:        "bytes_per_sequence": 8192,
// FP8:        "attention_flops": 16908288,
// FP8-TEXT-LABEL: 0 qkv_attention <kv> 256 4/1 64 64 (64 B)
// FP8-TEXT: kv cache per sequence: 8.192 kB vs 65.5 kB (MHA) per sequence at 128 tokens in fp8 (8x smaller, 87.5% less)

// -----

// No sharing (MHA, Hq = Hk = 2, d 64), NOT causal, f16; static batch 1, S 100.
//   cache: 2 Hk d = 256 values = MHA: 1x, 0%.
//   pairs: 100^2 = 10000; attention FLOPs 4 * 10000 * 128 * 1 = 5120000.
//   params: 4 * 128*128 = 65536; projection FLOPs 2 * 65536 * 100 = 13107200.
//   seq-len=64 batch=3: pairs 64^2 = 4096, 4 * 4096 * 128 * 3 = 6291456.
func.func @mha_non_causal(%x: tensor<1x100x128xf16>, %wq: tensor<128x128xf16>,
                          %wk: tensor<128x128xf16>, %wv: tensor<128x128xf16>,
                          %wo: tensor<128x128xf16>) -> tensor<1x100x128xf16> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : (tensor<1x100x128xf16>, tensor<128x128xf16>, tensor<128x128xf16>,
         tensor<128x128xf16>, tensor<128x128xf16>) -> tensor<1x100x128xf16>
  return %y : tensor<1x100x128xf16>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 100 tokens per sequence, batch 1
// TEXT:       0 qkv_attention <none> 128 2/2 64 256 (512 B) 0 B 65.5 k 5.12 M 13.1 M 1x, 0% less
// TEXT:       kv cache per sequence: 51.2 kB vs 51.2 kB (MHA) per sequence at 100 tokens in f16 (1x smaller, 0% less)
// TEXT-NOT:   kv cache per batch

// JSON-LABEL: "seq_len": 100,
// JSON:       "op": "qkv_attention <none>",
// JSON-NEXT:  "element_type": "f16",
// JSON-NEXT:  "element_bytes": 2,
// JSON:       "causal": false,
// JSON-NEXT:  "cache_values_per_token": 256,
// JSON:       "cache_reduction_vs_mha": 0,
// JSON-NEXT:  "parameters": 65536,
// JSON-NEXT:  "attention_pairs": 10000,
// JSON-NEXT:  "attention_flops": 5120000,
// JSON-NEXT:  "projection_flops": 13107200,

// OPT-LABEL: "op": "qkv_attention <none>",
// OPT:       "attention_pairs": 4096,
// OPT-NEXT:  "attention_flops": 6291456,

// -----

// Q=K=V, causal with a window of 16 keys, bf16; static batch 1, S 100.
//   cache: Hk d = 128 values = 256 B/token, for only w = 16 tokens:
//   4096 B per sequence; MHA 512 B * 100 = 51200 B.
//   pairs: 16*17/2 + (100-16)*16 = 136 + 1344 = 1480;
//   attention FLOPs 4 * 1480 * 128 = 757760.
//   params: 2 * 128*128 = 32768; projection FLOPs 2 * 32768 * 100 = 6553600.
//   seq-len=64 batch=3: pairs 136 + 48*16 = 904, 4 * 904 * 128 * 3 = 1388544.
func.func @qkv_causal_window(%x: tensor<1x100x128xbf16>,
                             %wk: tensor<128x128xbf16>,
                             %wo: tensor<128x128xbf16>)
    -> tensor<1x100x128xbf16> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
       causal, window = 16 : i64}
      : (tensor<1x100x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>)
      -> tensor<1x100x128xbf16>
  return %y : tensor<1x100x128xbf16>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 100 tokens per sequence, batch 1
// TEXT:       0 qkv_attention <qkv> 128 2/2 64 128 (256 B) 0 B 32.8 k 758 k 6.55 M 2x, 50% less
// TEXT:       kv cache per sequence: 4.096 kB vs 51.2 kB (MHA) per sequence at 100 tokens in bf16 (12.50x smaller, 92% less)

// JSON-LABEL: "seq_len": 100,
// JSON:       "op": "qkv_attention <qkv>",
// JSON:       "causal": true,
// JSON-NEXT:  "window": 16,
// JSON-NEXT:  "cache_values_per_token": 128,
// JSON-NEXT:  "cache_bytes_per_token": 256,
// JSON-NEXT:  "cached_tokens_per_sequence": 16,
// JSON:       "bytes_per_sequence": 4096,
// JSON:       "mha_bytes_per_sequence": 51200,
// JSON-NEXT:  "cache_reduction_vs_mha": 0.5,
// JSON-NEXT:  "parameters": 32768,
// JSON-NEXT:  "attention_pairs": 1480,
// JSON-NEXT:  "attention_flops": 757760,
// JSON-NEXT:  "projection_flops": 6553600,

// OPT-LABEL: "op": "qkv_attention <qkv>",
// OPT:       "cached_tokens_per_sequence": 16,
// OPT:       "attention_pairs": 904,
// OPT-NEXT:  "attention_flops": 1388544,

// -----

// Q-K=V, NOT causal, window 16 (keeps j > i - 16, all later keys); f32, S 100.
//   pairs: 100^2 - (100-16)(100-16+1)/2 = 10000 - 3570 = 6430;
//   attention FLOPs 4 * 6430 * 128 = 3292160.
func.func @kv_window(%x: tensor<1x100x128xf32>, %wq: tensor<128x128xf32>,
                     %wk: tensor<128x128xf32>, %wo: tensor<128x128xf32>)
    -> tensor<1x100x128xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
       window = 16 : i64}
      : (tensor<1x100x128xf32>, tensor<128x128xf32>, tensor<128x128xf32>,
         tensor<128x128xf32>) -> tensor<1x100x128xf32>
  return %y : tensor<1x100x128xf32>
}

// JSON-LABEL: "seq_len": 100,
// JSON:       "op": "qkv_attention <kv>",
// JSON:       "causal": false,
// JSON-NEXT:  "window": 16,
// JSON:       "attention_pairs": 6430,
// JSON-NEXT:  "attention_flops": 3292160,

// -----

// CCGQA (Hq 4, Hk 2, d 8 on E 64), kernels [2, 3], qk_mean, value_shift,
// causal, f32; static batch 1, S 16.
//   Lq 32, Lk 16, C 48, P = 1 + 2 = 3.
//   cache: 2 Lk = 32 values = 128 B/token; MHA 2 E = 128 values: 4x, 75%.
//   state: P C + Lk/2 = 3*48 + 8 = 152 values = 608 B.
//   per sequence: 128 B * 16 + 608 = 2656 B; MHA 512 B * 16 = 8192 B.
//   params: wq 32*64 + wk 16*64 + wv 8*64 + wv_prev 8*64 + conv_dw 48*1*2
//     + 48 + conv_g 48*8*3 + 48 + temp 2 + wo 64*32
//     = 2048 + 1024 + 512 + 512 + 96 + 48 + 1152 + 48 + 2 + 2048 = 7490.
//   pairs 16*17/2 = 136; attention FLOPs 4 * 136 * 32 = 17408.
//   projection FLOPs 2 * (2048 + 1024 + 512 + 512 + 2048) * 16 = 196608.
//   convolutions 2 * C (k0 + d k1) * S = 2 * 48 * (2 + 24) * 16 = 39936.
func.func @ccgqa(%x: tensor<1x16x64xf32>, %wq: tensor<32x64xf32>,
                 %wk: tensor<16x64xf32>, %wv: tensor<8x64xf32>,
                 %wvp: tensor<8x64xf32>, %dw: tensor<48x1x2xf32>,
                 %dwb: tensor<48xf32>, %gw: tensor<48x8x3xf32>,
                 %gwb: tensor<48xf32>, %temp: tensor<2xf32>,
                 %wo: tensor<64x32xf32>) -> tensor<1x16x64xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 3>, qk_mean, value_shift, causal}
      : (tensor<1x16x64xf32>, tensor<32x64xf32>, tensor<16x64xf32>,
         tensor<8x64xf32>, tensor<8x64xf32>, tensor<48x1x2xf32>,
         tensor<48xf32>, tensor<48x8x3xf32>, tensor<48xf32>, tensor<2xf32>,
         tensor<64x32xf32>) -> tensor<1x16x64xf32>
  return %y : tensor<1x16x64xf32>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 16 tokens per sequence, batch 1
// TEXT:       0 cca 64 4/2 8 32 (128 B) 608 B 7.49 k 17.4 k 237 k 4x, 75% less
// TEXT:       per-sequence state: 608 B
// TEXT-NEXT:  kv cache per sequence: 2.656 kB vs 8.192 kB (MHA) per sequence at 16 tokens in f32 (3.08x smaller, 67.578% less)
// TEXT:       prefill FLOPs: 254 k (attention 17.4 k, projections 197 k, convolutions 39.9 k)

// JSON-LABEL: "seq_len": 16,
// JSON:       "op": "cca",
// JSON:       "cache_values_per_token": 32,
// JSON-NEXT:  "cache_bytes_per_token": 128,
// JSON-NEXT:  "cached_tokens_per_sequence": 16,
// JSON-NEXT:  "state_values_per_sequence": 152,
// JSON-NEXT:  "state_bytes_per_sequence": 608,
// JSON-NEXT:  "bytes_per_sequence": 2656,
// JSON-NEXT:  "mha_cache_values_per_token": 128,
// JSON-NEXT:  "mha_bytes_per_sequence": 8192,
// JSON-NEXT:  "cache_reduction_vs_mha": 0.75,
// JSON-NEXT:  "parameters": 7490,
// JSON-NEXT:  "attention_pairs": 136,
// JSON-NEXT:  "attention_flops": 17408,
// JSON-NEXT:  "projection_flops": 196608,
// JSON-NEXT:  "other_flops": 39936

// -----

// The same layer over a padded batch: the padding mask is no parameter,
// cache or state, and the costs are those of the full batch.
func.func @ccgqa_padding_mask(%x: tensor<1x16x64xf32>, %wq: tensor<32x64xf32>,
                              %wk: tensor<16x64xf32>, %wv: tensor<8x64xf32>,
                              %wvp: tensor<8x64xf32>, %dw: tensor<48x1x2xf32>,
                              %dwb: tensor<48xf32>, %gw: tensor<48x8x3xf32>,
                              %gwb: tensor<48xf32>, %temp: tensor<2xf32>,
                              %wo: tensor<64x32xf32>, %m: tensor<1x16xi64>)
    -> tensor<1x16x64xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      padding_mask(%m)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 3>, qk_mean, value_shift, causal}
      : (tensor<1x16x64xf32>, tensor<32x64xf32>, tensor<16x64xf32>,
         tensor<8x64xf32>, tensor<8x64xf32>, tensor<48x1x2xf32>,
         tensor<48xf32>, tensor<48x8x3xf32>, tensor<48xf32>, tensor<2xf32>,
         tensor<64x32xf32>, tensor<1x16xi64>) -> tensor<1x16x64xf32>
  return %y : tensor<1x16x64xf32>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 16 tokens per sequence, batch 1
// TEXT:       0 cca 64 4/2 8 32 (128 B) 608 B 7.49 k 17.4 k 237 k 4x, 75% less

// JSON-LABEL: "seq_len": 16,
// JSON:       "parameters": 7490,

// -----

// Dynamic batch and sequence: the defaults, 32768 tokens and batch 1.
// Q=K=V, one head of 64, causal, f32.
//   pairs 32768*32769/2 = 536887296; attention FLOPs 4 * 536887296 * 64
//   = 137443147776.
//   cache 64 values = 256 B/token; per sequence 256 * 32768 = 8388608 B
//   ("8.389 MB"); MHA 512 B/token, 16777216 B ("16.8 MB").
func.func @dynamic(%x: tensor<?x?x64xf32>, %wk: tensor<64x64xf32>,
                   %wo: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, causal}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
      -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 32768 tokens per sequence, batch 1
// TEXT:       0 qkv_attention <qkv> 64 1/1 64 64 (256 B) 0 B 8.19 k 137 G 537 M 2x, 50% less
// TEXT:       kv cache per sequence: 8.389 MB vs 16.8 MB (MHA) per sequence at 32768 tokens in f32 (2x smaller, 50% less)

// JSON-LABEL: "seq_len": 32768,
// JSON-NEXT:  "batch": 1,
// JSON:       "attention_pairs": 536887296,
// JSON-NEXT:  "attention_flops": 137443147776,

// -----

// Rounding at a unit boundary: Q=K=V, 7 heads of 101 on E 707, f16, S 707.
//   params 2 * 707^2 = 999698: "1 M", not "1e+03 k".
//   per sequence 707 values * 2 B * 707 tokens = 999698 B: "1.000 MB", not
//   "1000 kB"; MHA 2 * 707 * 2 B * 707 = 1999396 B: "1.999 MB".
func.func @rounding(%x: tensor<1x707x707xf16>, %wk: tensor<707x707xf16>,
                    %wo: tensor<707x707xf16>) -> tensor<1x707x707xf16> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 7 : i64, num_kv_heads = 7 : i64, head_dim = 101 : i64}
      : (tensor<1x707x707xf16>, tensor<707x707xf16>, tensor<707x707xf16>)
      -> tensor<1x707x707xf16>
  return %y : tensor<1x707x707xf16>
}

// TEXT-LABEL: attn-cost-report: 1 attention layer, 707 tokens per sequence, batch 1
// TEXT:       0 qkv_attention <qkv> 707 7/7 101 707 (1.414 kB) 0 B 1 M
// TEXT:       kv cache per sequence: 1.000 MB vs 1.999 MB (MHA)
// TEXT:       parameters: 1 M

// -----

// Decode steps: one K=V GQA-4 step over a contiguous cache of 4096 tokens
// (the cache capacity sets the tokens per sequence), batch 8, bf16:
//   cache/token = Hk d = 4 * 64 = 256 values = 512 B; MHA 2 E = 2048 values:
//   8x, 87.5% less; per sequence 512 B * 4096 = 2.097 MB.
//   attention pairs = 4096 keys for the new token; FLOPs = 4 * 4096 * 16 * 64
//   * 8 = 134.2 M; projections 2 * (1024^2 + 256 * 1024 + 1024^2) * 8 = 37.7 M.
// A ZAYA1-shaped CCGQA step adds the state: P C + Lk / 2 = 2 * 1280 + 128 =
//   2688 values = 5.376 kB per sequence in bf16.
// TEXT-LABEL: attn-cost-report: 2 attention layers, 4096 tokens per sequence, batch 8
// TEXT:       0 qkv_decode <kv> 1024 16/4 64 256 (512 B) 0 B 2.36 M 134 M 37.7 M 8x, 87.5% less
// TEXT:       1 cca_decode 2048 8/2 128 512 (1.024 kB) 5.376 kB
// TEXT:       per-sequence state: 5.376 kB
// TEXT:       decode-step FLOPs:
// JSON-LABEL: "op": "qkv_decode <kv>"
// JSON:       "cached_tokens_per_sequence": 4096
// JSON:       "attention_pairs": 4096
// JSON:       "attention_flops": 134217728
// JSON:       "projection_flops": 37748736
// JSON:       "decode_step": true
// JSON:       "op": "cca_decode"
// JSON:       "state_values_per_sequence": 2688
// JSON:       "state_bytes_per_sequence": 5376
func.func @decode_steps(%x: tensor<8x1x1024xbf16>, %wq: tensor<1024x1024xbf16>,
    %wk: tensor<256x1024xbf16>, %wo: tensor<1024x1024xbf16>,
    %kv: tensor<8x4096x4x64xbf16>, %pos: tensor<8xi32>,
    %z: tensor<8x1x2048xbf16>, %zq: tensor<1024x2048xbf16>,
    %zk: tensor<256x2048xbf16>, %zv: tensor<128x2048xbf16>,
    %zvp: tensor<128x2048xbf16>, %dw: tensor<1280x1x2xbf16>,
    %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>,
    %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>,
    %zo: tensor<2048x1024xbf16>, %kc: tensor<8x4096x2x128xbf16>,
    %vc: tensor<8x4096x2x128xbf16>, %cs: tensor<8x2x1280xbf16>,
    %ss: tensor<8x1x128xbf16>) {
  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kv)
      positions(%pos)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64}
      : (tensor<8x1x1024xbf16>, tensor<1024x1024xbf16>,
         tensor<256x1024xbf16>, tensor<1024x1024xbf16>,
         tensor<8x4096x4x64xbf16>, tensor<8xi32>)
      -> (tensor<8x1x1024xbf16>, tensor<8x4096x4x64xbf16>)
  %o, %k2, %v2, %c2, %s2 = attn.cca_decode %z wq(%zq) wk(%zk) wv(%zv)
      wv_prev(%zvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%zo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift}
      : (tensor<8x1x2048xbf16>, tensor<1024x2048xbf16>,
         tensor<256x2048xbf16>, tensor<128x2048xbf16>,
         tensor<128x2048xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>,
         tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>,
         tensor<2048x1024xbf16>, tensor<8x4096x2x128xbf16>,
         tensor<8x4096x2x128xbf16>, tensor<8x2x1280xbf16>,
         tensor<8x1x128xbf16>, tensor<8xi32>)
      -> (tensor<8x1x2048xbf16>, tensor<8x4096x2x128xbf16>,
          tensor<8x4096x2x128xbf16>, tensor<8x2x1280xbf16>,
          tensor<8x1x128xbf16>)
  return
}
