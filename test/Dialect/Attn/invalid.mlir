// RUN: attnfuse-opt %s -split-input-file -verify-diagnostics

// Every diagnostic the attn verifiers, the ODS constraints and the custom
// parsers can emit, one case per split.

// -----

// The layer input is [batch, seq, E].
func.func @qkv_input_rank(%x: tensor<8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'input' must be a rank-3 tensor [batch, seq, E], got rank 2}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// The model width must be static.
func.func @qkv_input_dynamic_width(%x: tensor<2x8x?xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x?xf32> {
  // expected-error @+1 {{'input' must have a static model width E (dimension 2), got [2, 8, ?]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x?xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x?xf32>
  return %y : tensor<2x8x?xf32>
}

// -----

// The result has the shape of the input.
func.func @qkv_result_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq, E] = [2, 8, 16], got [2, 8, 8]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// -----

// The result batch follows the input.
func.func @qkv_result_batch(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<3x8x16xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq, E] = [2, 8, 16], got [3, 8, 16]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<3x8x16xf32>
  return %y : tensor<3x8x16xf32>
}

// -----

// GQA needs num_heads to be a multiple of num_kv_heads.
func.func @qkv_heads_not_multiple(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{num_heads (4) must be a multiple of num_kv_heads (3)}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'none' needs wq.
func.func @qkv_none_missing_wq(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'none' needs a query projection 'wq'}}
  %y = attn.qkv_attention <none> %x wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'kv' needs wq.
func.func @qkv_kv_missing_wq(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'kv' needs a query projection 'wq'}}
  %y = attn.qkv_attention <kv> %x wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'qk' uses the key as the query.
func.func @qkv_qk_with_wq(%x: tensor<2x8x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'qk' uses the key projection as the query; 'wq' must be absent}}
  %y = attn.qkv_attention <qk> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'qkv' uses the key as the query.
func.func @qkv_qkv_with_wq(%x: tensor<2x8x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'qkv' uses the key projection as the query; 'wq' must be absent}}
  %y = attn.qkv_attention <qkv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'none' needs wv.
func.func @qkv_none_missing_wv(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'none' needs a value projection 'wv'}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'qk' needs wv.
func.func @qkv_qk_missing_wv(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'qk' needs a value projection 'wv'}}
  %y = attn.qkv_attention <qk> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'kv' uses the key as the value.
func.func @qkv_kv_with_wv(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'kv' uses the key projection as the value; 'wv' must be absent}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'qkv' uses the key as the value.
func.func @qkv_qkv_with_wv(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'qkv' uses the key projection as the value; 'wv' must be absent}}
  %y = attn.qkv_attention <qkv> %x wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'qk' cannot use GQA: the query is the key.
func.func @qkv_qk_gqa(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'qk' uses the key as the query, so num_heads (4) must equal num_kv_heads (2)}}
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// 'qkv' cannot use MQA: the query is the key.
func.func @qkv_qkv_mqa(%x: tensor<2x8x16xf32>, %wk: tensor<4x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{sharing mode 'qkv' uses the key as the query, so num_heads (4) must equal num_kv_heads (1)}}
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<4x16xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// A query bias needs a query projection.
func.func @qkv_bq_without_wq(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>,
    %bq: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bq' is given without a query projection 'wq'}}
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo) bq(%bq)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// A value bias needs a value projection.
func.func @qkv_bv_without_wv(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bv: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bv' is given without a value projection 'wv'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bv(%bv)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wq is [num_heads * head_dim, E].
func.func @qkv_wq_shape(%x: tensor<2x8x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wq' must have shape [num_heads * head_dim, E] = [16, 16], got [8, 16]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Weights have static shapes.
func.func @qkv_wq_dynamic(%x: tensor<2x8x16xf32>, %wq: tensor<?x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wq' must have shape [num_heads * head_dim, E] = [16, 16], got [?, 16]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<?x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wk is [num_kv_heads * head_dim, E].
func.func @qkv_wk_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wk' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [16, 16]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wk is a matrix.
func.func @qkv_wk_rank(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16x1xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wk' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [8, 16, 1]}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16x1xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Weights have static shapes, also in E.
func.func @qkv_wk_dynamic(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x?xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wk' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [8, ?]}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x?xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wv is [num_kv_heads * head_dim, E].
func.func @qkv_wv_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x12xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [8, 12]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x12xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wo is [E, num_heads * head_dim].
func.func @qkv_wo_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wo' must have shape [E, num_heads * head_dim] = [16, 16], got [16, 8]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wo of a Q=K=V layer reads num_heads * head_dim.
func.func @qkv_wo_shape_qkv(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wo' must have shape [E, num_heads * head_dim] = [16, 8], got [16, 16]}}
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// bq is [num_heads * head_dim].
func.func @qkv_bq_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bq: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bq' must have shape [num_heads * head_dim] = [16], got [8]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) bq(%bq)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// bk is [num_kv_heads * head_dim].
func.func @qkv_bk_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bk: tensor<16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bk' must have shape [num_kv_heads * head_dim] = [8], got [16]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) bk(%bk)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Biases have static shapes.
func.func @qkv_bk_dynamic(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bk: tensor<?xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bk' must have shape [num_kv_heads * head_dim] = [8], got [?]}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bk(%bk)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<?xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// bv is [num_kv_heads * head_dim].
func.func @qkv_bv_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bv: tensor<4xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bv' must have shape [num_kv_heads * head_dim] = [8], got [4]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) bv(%bv)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<4xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// bo is [E].
func.func @qkv_bo_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bo: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bo' must have shape [E] = [16], got [8]}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// bo is a vector.
func.func @qkv_bo_rank(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bo: tensor<1x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bo' must have shape [E] = [16], got [1, 16]}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<1x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// An [S, T] logit bias.
func.func @qkv_logit_bias_2d_shape(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %logit_bias: tensor<8x4xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'logit_bias' must have shape [S, T] = [8, 8], got [8, 4]}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      logit_bias(%logit_bias)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<8x4xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// A [num_heads, S, T] logit bias.
func.func @qkv_logit_bias_3d_shape(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %logit_bias: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'logit_bias' must have shape [num_heads, S, T] = [4, 8, 8], got [2, 8, 8]}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      logit_bias(%logit_bias)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The logit bias is rank 2 or 3.
func.func @qkv_logit_bias_rank_1(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %logit_bias: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'logit_bias' must be [S, T] or [num_heads, S, T], got rank 1}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      logit_bias(%logit_bias)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The logit bias does not carry the batch.
func.func @qkv_logit_bias_rank_4(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %logit_bias: tensor<2x4x8x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'logit_bias' must be [S, T] or [num_heads, S, T], got rank 4}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      logit_bias(%logit_bias)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x4x8x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The window is a positive number of keys.
func.func @qkv_window_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{window must be a positive number of keys, got 0}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal,
       window = 0 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The window is a positive number of keys.
func.func @qkv_window_negative(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{window must be a positive number of keys, got -4}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       window = -4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The scale is positive.
func.func @qkv_scale_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{scale must be a positive finite number}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       scale = 0.0 : f64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The scale is positive.
func.func @qkv_scale_negative(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{scale must be a positive finite number}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       scale = -0.5 : f64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The scale is finite.
func.func @qkv_scale_infinite(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{scale must be a positive finite number}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       scale = 0x7FF0000000000000 : f64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// rope must rotate a whole number of dimensions.
func.func @qkv_rope_fraction_not_whole(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{of head_dim 4 is not a whole number of dimensions}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.3>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// rope rotates dimension pairs.
func.func @qkv_rope_odd_width(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{rope rotates 1 dimensions of each head; the rotated width must be even}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.25>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_wq_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf16>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wq' has element type 'f16', expected 'f32' (the element type of 'input')}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf16>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_wk_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xbf16>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wk' has element type 'bf16', expected 'f32' (the element type of 'input')}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xbf16>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_wv_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf16>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv' has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf16>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type; names follow the present operands.
func.func @qkv_wo_element_type_kv(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x16xf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wo' has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf16>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_bq_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bq: tensor<16xf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bq' has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) bq(%bq)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf16>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_bk_element_type(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x8xf32>, %bk: tensor<8xf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bk' has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo) bk(%bk)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8xf16>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_bv_element_type(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>,
    %bv: tensor<8xf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bv' has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo) bv(%bv)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8xf16>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_bo_element_type(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x8xf32>, %bo: tensor<16xf64>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'bo' has element type 'f64', expected 'f32'}}
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo) bo(%bo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16xf64>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @qkv_logit_bias_element_type(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bk: tensor<8xf32>, %logit_bias: tensor<4x8x8xf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'logit_bias' has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bk(%bk)
      logit_bias(%logit_bias)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<8xf32>, tensor<4x8x8xf16>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The result has the input's element type.
func.func @qkv_result_element_type(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf16> {
  // expected-error @+1 {{result has element type 'f16', expected 'f32'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf16>
  return %y : tensor<2x8x16xf16>
}

// -----

// num_heads is positive.
func.func @qkv_num_heads_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// num_kv_heads is positive.
func.func @qkv_num_kv_heads_negative(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{attribute 'num_kv_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = -2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// head_dim is positive.
func.func @qkv_head_dim_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{attribute 'head_dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 0 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Activations are floating point.
func.func @qkv_integer_input(%x: tensor<2x8x16xi32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<2x8x16xi32>'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xi32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xi32>
  return %y : tensor<2x8x16xi32>
}

// -----

// Weights are floating point.
func.func @qkv_integer_weight(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xi8>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{operand #2 must be ranked tensor of floating-point values, but got 'tensor<8x16xi8>'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xi8>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The result is floating point.
func.func @qkv_integer_result(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of floating-point values, but got 'tensor<2x8x16xi32>'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xi32>
  return %y : tensor<2x8x16xi32>
}

// -----

// Tensors are ranked.
func.func @qkv_unranked_input(%x: tensor<*xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<*xf32>'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<*xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>)
      -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// num_heads is required.
func.func @qkv_missing_num_heads(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{requires attribute 'num_heads'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) {num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// An unknown sharing mode.
func.func @qkv_unknown_sharing(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{expected ::attnfuse::attn::SharingMode to be one of: none, kv, qk, qkv}}
  // expected-error @+1 {{failed to parse Attn_SharingModeAttr parameter 'value'}}
  %y = attn.qkv_attention <kvq> %x wq(%wq) wk(%wk) wo(%wo) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The output projection keyword is required.
func.func @qkv_missing_wo(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{expected 'wo'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The key projection keyword is required.
func.func @qkv_missing_wk(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{expected 'wk'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) wo(%wo) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Optional operand groups come in order.
func.func @qkv_biases_out_of_order(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %bk: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{expected 'wk'}}
  %y = attn.qkv_attention <kv> %x wq(%wq) bk(%bk) wk(%wk) wo(%wo) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Malformed #attn.rope: no =.
// expected-error @+1 {{expected '='}}
func.func private @rope_missing_equal() attributes {a = #attn.rope<theta 10000.0>}

// -----

// Malformed #attn.rope: theta is required.
// expected-error @+1 {{expected 'theta'}}
func.func private @rope_missing_theta() attributes {a = #attn.rope<fraction = 0.5>}

// -----

// Malformed #attn.rope: unknown parameter.
// expected-error @+1 {{expected 'fraction'}}
func.func private @rope_unknown_parameter() attributes {a = #attn.rope<theta = 10000.0, frac = 0.5>}

// -----

// Malformed #attn.rope: theta is a number.
// expected-error @+1 {{expected floating point literal}}
func.func private @rope_theta_not_float() attributes {a = #attn.rope<theta = base>}

// -----

// Malformed #attn.rope: unclosed.
// expected-error @+1 {{expected '>'}}
func.func private @rope_missing_greater() attributes {a = #attn.rope<theta = 10000.0 fraction = 0.5>}

// -----

// rope theta is positive.
// expected-error @+1 {{rope theta must be a positive finite number}}
func.func private @rope_theta_negative() attributes {a = #attn.rope<theta = -1.0>}

// -----

// rope theta is positive.
// expected-error @+1 {{rope theta must be a positive finite number}}
func.func private @rope_theta_zero() attributes {a = #attn.rope<theta = 0.0, fraction = 0.5>}

// -----

// rope theta is finite.
// expected-error @+1 {{rope theta must be a positive finite number}}
func.func private @rope_theta_infinite() attributes {a = #attn.rope<theta = 0x7FF0000000000000>}

// -----

// rope fraction is in [0, 1].
// expected-error @+1 {{rope fraction must be in [0, 1]}}
func.func private @rope_fraction_above_one() attributes {a = #attn.rope<theta = 10000.0, fraction = 1.5>}

// -----

// rope fraction is in [0, 1].
// expected-error @+1 {{rope fraction must be in [0, 1]}}
func.func private @rope_fraction_negative() attributes {a = #attn.rope<theta = 10000.0, fraction = -0.5>}

// -----

// An unknown #attn.sharing value.
// expected-error @+2 {{expected ::attnfuse::attn::SharingMode to be one of: none, kv, qk, qkv}}
// expected-error @+1 {{failed to parse Attn_SharingModeAttr parameter 'value'}}
func.func private @sharing_unknown() attributes {a = #attn.sharing<kvq>}

// -----

// An unknown #attn.temperature value.
// expected-error @+2 {{expected ::attnfuse::attn::TemperatureMode to be one of: raw, clamped}}
// expected-error @+1 {{failed to parse Attn_TemperatureModeAttr parameter 'value'}}
func.func private @temperature_unknown() attributes {a = #attn.temperature<clamp>}

// -----

// An unknown #attn.norm value.
// expected-error @+2 {{expected ::attnfuse::attn::NormMode to be one of: sqrt_eps, clamp_eps}}
// expected-error @+1 {{failed to parse Attn_NormModeAttr parameter 'value'}}
func.func private @norm_unknown() attributes {a = #attn.norm<clamp>}

// -----

// The layer input is [batch, seq, E].
func.func @cca_input_rank(%x: tensor<1x2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{'input' must be a rank-3 tensor [batch, seq, E], got rank 4}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<1x2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// The model width must be static.
func.func @cca_input_dynamic_width(%x: tensor<?x?x?xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'input' must have a static model width E (dimension 2), got [?, ?, ?]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<?x?x?xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}

// -----

// The result has the shape of the input.
func.func @cca_result_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x9x16xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq, E] = [2, 8, 16], got [2, 9, 16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x9x16xf32>
  return %y : tensor<2x9x16xf32>
}

// -----

// CCGQA needs num_heads to be a multiple of num_kv_heads.
func.func @cca_heads_not_multiple(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{num_heads (4) must be a multiple of num_kv_heads (3)}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Two kernel sizes.
func.func @cca_kernel_sizes_count(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{conv_kernel_sizes must hold two positive kernel sizes [k0, k1], got [2, 2, 2]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Two kernel sizes.
func.func @cca_kernel_sizes_one(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{conv_kernel_sizes must hold two positive kernel sizes [k0, k1], got [2]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Positive kernel sizes.
func.func @cca_kernel_sizes_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{conv_kernel_sizes must hold two positive kernel sizes [k0, k1], got [0, 2]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 0, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Positive kernel sizes.
func.func @cca_kernel_sizes_negative(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{conv_kernel_sizes must hold two positive kernel sizes [k0, k1], got [2, -1]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, -1>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// conv_kernel_sizes is required.
func.func @cca_missing_kernel_sizes(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{requires attribute 'conv_kernel_sizes'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The value shift halves the value channels.
func.func @cca_value_shift_odd(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wv_prev: tensor<4x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{value_shift splits the num_kv_heads * head_dim = 3 value channels in two halves; it must be even}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wv_prev)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 3 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The value shift needs wv_prev.
func.func @cca_value_shift_missing_wv_prev(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<4x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{value_shift needs the previous-token projection 'wv_prev'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wv_prev only with value_shift.
func.func @cca_wv_prev_without_value_shift(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wv_prev: tensor<4x16xf32>, %conv_dw_weight: tensor<24x1x2xf32>,
    %conv_dw_bias: tensor<24xf32>, %conv_g_weight: tensor<24x4x2xf32>,
    %conv_g_bias: tensor<24xf32>, %temp: tensor<2xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv_prev' is given but value_shift is not set}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wv_prev)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wq is [num_heads * head_dim, E].
func.func @cca_wq_shape(%x: tensor<2x8x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wq' must have shape [num_heads * head_dim, E] = [16, 16], got [8, 16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wk is [num_kv_heads * head_dim, E].
func.func @cca_wk_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x32xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wk' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [8, 32]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x32xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Weights have static shapes.
func.func @cca_wk_dynamic(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<?x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wk' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [?, 16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<?x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wv is [num_kv_heads * head_dim, E] without value shift.
func.func @cca_wv_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<4x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv' must have shape [num_kv_heads * head_dim, E] = [8, 16], got [4, 16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wv is [num_kv_heads * head_dim / 2, E] with value shift.
func.func @cca_wv_shape_value_shift(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wv_prev: tensor<4x16xf32>, %conv_dw_weight: tensor<24x1x2xf32>,
    %conv_dw_bias: tensor<24xf32>, %conv_g_weight: tensor<24x4x2xf32>,
    %conv_g_bias: tensor<24xf32>, %temp: tensor<2xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv' must have shape [num_kv_heads * head_dim / 2, E] = [4, 16], got [8, 16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wv_prev)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wv_prev is [num_kv_heads * head_dim / 2, E].
func.func @cca_wv_prev_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<4x16xf32>, %wv_prev: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv_prev' must have shape [num_kv_heads * head_dim / 2, E] = [4, 16], got [8, 16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wv_prev)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The depthwise weight is [C, 1, k0].
func.func @cca_conv_dw_weight_shape(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_dw_weight' must have shape [(num_heads + num_kv_heads) * head_dim, 1, k0] = [24, 1, 3], got [24, 1, 2]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 3, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The depthwise weight has a static shape.
func.func @cca_conv_dw_weight_dynamic(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x?xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_dw_weight' must have shape [(num_heads + num_kv_heads) * head_dim, 1, k0] = [24, 1, 2], got [24, 1, ?]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x?xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The depthwise bias is [C].
func.func @cca_conv_dw_bias_shape(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<16xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_dw_bias' must have shape [(num_heads + num_kv_heads) * head_dim] = [24], got [16]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<16xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The grouped weight is [C, head_dim, k1].
func.func @cca_conv_g_weight_shape(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x24x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_g_weight' must have shape [(num_heads + num_kv_heads) * head_dim, head_dim, k1] = [24, 4, 2], got [24, 24, 2]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x24x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The grouped weight has k1 taps.
func.func @cca_conv_g_weight_kernel(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_g_weight' must have shape [(num_heads + num_kv_heads) * head_dim, head_dim, k1] = [24, 4, 3], got [24, 4, 2]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 3>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The grouped bias is [C].
func.func @cca_conv_g_bias_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<6xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_g_bias' must have shape [(num_heads + num_kv_heads) * head_dim] = [24], got [6]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<6xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// temp is [num_kv_heads].
func.func @cca_temp_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<4xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'temp' must have shape [num_kv_heads] = [2], got [4]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<4xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// wo is [E, num_heads * head_dim].
func.func @cca_wo_shape(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wo' must have shape [E, num_heads * head_dim] = [16, 16], got [16, 8]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// eps is positive.
func.func @cca_eps_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{eps must be positive, got 0}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, eps = 0.0 : f64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// eps is positive.
func.func @cca_eps_negative(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{eps must be positive}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, eps = -1.0e-12 : f64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The layer's clamp_eps norm needs an eps whose square is a normal f32.
func.func @cca_clamp_eps_underflows(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{norm = clamp_eps needs eps >= 1.1e-19}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, norm = #attn.norm<clamp_eps>,
       eps = 1.0e-25 : f64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The window is a positive number of keys.
func.func @cca_window_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{window must be a positive number of keys, got 0}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, causal, window = 0 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// rope must rotate a whole number of dimensions.
func.func @cca_rope_fraction_not_whole(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{of head_dim 4 is not a whole number of dimensions}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.1>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// rope rotates dimension pairs.
func.func @cca_rope_odd_width(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{rope rotates 3 dimensions of each head; the rotated width must be even}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.75>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @cca_wq_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf16>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wq' has element type 'f16', expected 'f32' (the element type of 'input')}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf16>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @cca_wv_prev_element_type(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<4x16xf32>,
    %wv_prev: tensor<4x16xbf16>, %conv_dw_weight: tensor<24x1x2xf32>,
    %conv_dw_bias: tensor<24xf32>, %conv_g_weight: tensor<24x4x2xf32>,
    %conv_g_bias: tensor<24xf32>, %temp: tensor<2xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wv_prev' has element type 'bf16', expected 'f32'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wv_prev)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xbf16>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type; names follow the present operands.
func.func @cca_conv_dw_weight_element_type(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf16>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_dw_weight' has element type 'f16', expected 'f32'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf16>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type; names follow the present operands.
func.func @cca_conv_g_bias_element_type_value_shift(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<4x16xf32>,
    %wv_prev: tensor<4x16xf32>, %conv_dw_weight: tensor<24x1x2xf32>,
    %conv_dw_bias: tensor<24xf32>, %conv_g_weight: tensor<24x4x2xf32>,
    %conv_g_bias: tensor<24xf16>, %temp: tensor<2xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'conv_g_bias' has element type 'f16', expected 'f32'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wv_prev)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf16>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @cca_temp_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf16>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'temp' has element type 'f16', expected 'f32'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf16>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// One element type.
func.func @cca_wo_element_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xbf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'wo' has element type 'bf16', expected 'f32'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xbf16>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The result has the input's element type.
func.func @cca_result_element_type(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf16> {
  // expected-error @+1 {{result has element type 'f16', expected 'f32'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf16>
  return %y : tensor<2x8x16xf16>
}

// -----

// num_kv_heads is positive.
func.func @cca_num_kv_heads_zero(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+4 {{attribute 'num_kv_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 0 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The temperature is floating point.
func.func @cca_integer_temp(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xi32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{operand #8 must be ranked tensor of floating-point values, but got 'tensor<2xi32>'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xi32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// An unknown temperature mode.
func.func @cca_unknown_temperature(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+7 {{expected ::attnfuse::attn::TemperatureMode to be one of: raw, clamped}}
  // expected-error @+6 {{failed to parse Attn_TemperatureModeAttr parameter 'value'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%conv_dw_weight, %conv_dw_bias)
      conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>,
       temperature = #attn.temperature<exp>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The temp keyword is required.
func.func @cca_missing_temp(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_dw_bias: tensor<24xf32>,
    %conv_g_weight: tensor<24x4x2xf32>, %conv_g_bias: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{expected 'temp'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%conv_dw_weight, %conv_dw_bias) conv_g(%conv_g_weight, %conv_g_bias) wo(%wo) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<16x16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// conv_dw takes a weight and a bias.
func.func @cca_conv_dw_one_operand(%x: tensor<2x8x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %conv_dw_weight: tensor<24x1x2xf32>, %conv_g_weight: tensor<24x4x2xf32>,
    %conv_g_bias: tensor<24xf32>, %temp: tensor<2xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{expected ','}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%conv_dw_weight) conv_g(%conv_g_weight, %conv_g_bias) temp(%temp) wo(%wo) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24x4x2xf32>,
         tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The input is [batch, seq, in].
func.func @project_input_rank(%x: tensor<8x16xf32>,
    %w: tensor<8x16xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'input' must be a rank-3 tensor [batch, seq, in], got rank 2}}
  %r = attn.project %x, %w
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The weight is [out_features, in_features].
func.func @project_weight_rank(%x: tensor<2x8x16xf32>,
    %w: tensor<16xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'weight' must be a rank-2 tensor [out_features, in_features], got rank 1}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The output width is static.
func.func @project_weight_dynamic_out(%x: tensor<2x8x16xf32>,
    %w: tensor<?x16xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'weight' must have a static out_features (dimension 0), got [?, 16]}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<?x16xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The weight reads the input width.
func.func @project_weight_in_features(%x: tensor<2x8x16xf32>,
    %w: tensor<8x12xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'weight' must have shape [out_features, in_features] = [8, 16], got [8, 12]}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<8x12xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The bias is [out_features].
func.func @project_bias_shape(%x: tensor<2x8x16xf32>, %w: tensor<8x16xf32>,
    %b: tensor<16xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'bias' must have shape [out_features] = [8], got [16]}}
  %r = attn.project %x, %w, %b
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The result is [batch, seq, out_features].
func.func @project_result_width(%x: tensor<2x8x16xf32>,
    %w: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq, out_features] = [2, 8, 8], got [2, 8, 16]}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}

// -----

// The result keeps the sequence.
func.func @project_result_seq(%x: tensor<2x8x16xf32>,
    %w: tensor<8x16xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq, out_features] = [2, 8, 8], got [2, 4, 8]}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// One element type.
func.func @project_weight_element_type(%x: tensor<2x8x16xf32>,
    %w: tensor<8x16xf16>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'weight' has element type 'f16', expected 'f32' (the element type of 'input')}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<8x16xf16>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// One element type.
func.func @project_bias_element_type(%x: tensor<2x8x16xf32>,
    %w: tensor<8x16xf32>, %b: tensor<8xbf16>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'bias' has element type 'bf16', expected 'f32'}}
  %r = attn.project %x, %w, %b
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8xbf16>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The result has the input's element type.
func.func @project_result_element_type(%x: tensor<2x8x16xf32>,
    %w: tensor<8x16xf32>) -> tensor<2x8x8xf16> {
  // expected-error @+1 {{result has element type 'f16', expected 'f32'}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf16>
  return %r : tensor<2x8x8xf16>
}

// -----

// Activations are floating point.
func.func @project_integer(%x: tensor<2x8x16xi32>,
    %w: tensor<8x16xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<2x8x16xi32>'}}
  %r = attn.project %x, %w
      : (tensor<2x8x16xi32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The input is [batch, seq, channels].
func.func @conv_input_rank(%u: tensor<8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'input' must be a rank-3 tensor [batch, seq, channels], got rank 2}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The channel count is static.
func.func @conv_input_dynamic_channels(%u: tensor<2x8x?xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'input' must have a static channel count (dimension 2), got [2, 8, ?]}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x?xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The weight is [channels, channels / groups, kernel].
func.func @conv_weight_rank(%u: tensor<2x8x24xf32>,
    %w: tensor<24x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'weight' must be a rank-3 tensor [channels, channels / groups, kernel], got rank 2}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The kernel size is static.
func.func @conv_weight_dynamic_kernel(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x?xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'weight' must have a static kernel size (dimension 2), got [24, 1, ?]}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x?xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// groups divide the channels.
func.func @conv_groups_not_divisor(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{groups (5) must divide the channel count (24)}}
  %r = attn.causal_conv1d %u, %w {groups = 5 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// At least one tap.
func.func @conv_no_taps(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x0xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'weight' must have at least one tap, got 0}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x0xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The weight has channels / groups input channels.
func.func @conv_weight_shape(%u: tensor<2x8x24xf32>,
    %w: tensor<24x2x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'weight' must have shape [channels, channels / groups, kernel] = [24, 1, 2], got [24, 2, 2]}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x2x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The weight has one filter per channel.
func.func @conv_weight_out_channels(%u: tensor<2x8x24xf32>,
    %w: tensor<12x4x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'weight' must have shape [channels, channels / groups, kernel] = [24, 4, 2], got [12, 4, 2]}}
  %r = attn.causal_conv1d %u, %w {groups = 6 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<12x4x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The bias is [channels].
func.func @conv_bias_shape(%u: tensor<2x8x24xf32>, %w: tensor<24x1x2xf32>,
    %b: tensor<12xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'bias' must have shape [channels] = [24], got [12]}}
  %r = attn.causal_conv1d %u, %w, %b {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>, tensor<12xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// Too few time steps for the kernel.
func.func @conv_negative_length(%u: tensor<2x1x24xf32>,
    %w: tensor<24x1x4xf32>) -> tensor<2x?x24xf32> {
  // expected-error @+1 {{a kernel of 4 taps over 1 time steps padded by 0 yields a negative length -2}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 0 : i64}
      : (tensor<2x1x24xf32>, tensor<24x1x4xf32>) -> tensor<2x?x24xf32>
  return %r : tensor<2x?x24xf32>
}

// -----

// The result has seq + padding - (kernel - 1) steps.
func.func @conv_result_length(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq + padding - (kernel - 1), channels] = [2, 9, 24], got [2, 8, 24]}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 2 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The result keeps the channels.
func.func @conv_result_channels(%u: tensor<2x?x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x?x12xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq + padding - (kernel - 1), channels] = [2, ?, 24], got [2, ?, 12]}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x?x24xf32>, tensor<24x1x2xf32>) -> tensor<2x?x12xf32>
  return %r : tensor<2x?x12xf32>
}

// -----

// One element type.
func.func @conv_bias_element_type(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>, %b: tensor<24xf16>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'bias' has element type 'f16', expected 'f32' (the element type of 'input')}}
  %r = attn.causal_conv1d %u, %w, %b {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>, tensor<24xf16>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// One element type.
func.func @conv_weight_element_type(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xbf16>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{'weight' has element type 'bf16', expected 'f32'}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xbf16>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// The result has the input's element type.
func.func @conv_result_element_type(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf16> {
  // expected-error @+1 {{result has element type 'f16', expected 'f32'}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf16>
  return %r : tensor<2x8x24xf16>
}

// -----

// groups is positive.
func.func @conv_groups_zero(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{attribute 'groups' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = attn.causal_conv1d %u, %w {groups = 0 : i64, padding = 1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// padding is non-negative.
func.func @conv_padding_negative(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{attribute 'padding' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64, padding = -1 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// padding is required.
func.func @conv_missing_padding(%u: tensor<2x8x24xf32>,
    %w: tensor<24x1x2xf32>) -> tensor<2x8x24xf32> {
  // expected-error @+1 {{requires attribute 'padding'}}
  %r = attn.causal_conv1d %u, %w {groups = 24 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>) -> tensor<2x8x24xf32>
  return %r : tensor<2x8x24xf32>
}

// -----

// Queries are [batch, seq, heads, head_dim].
func.func @qk_mean_query_rank(%qc: tensor<2x8x16xf32>, %kc: tensor<2x8x2x4xf32>,
    %qr: tensor<2x8x16xf32>,
    %kr: tensor<2x8x2x4xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'q_conv' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 3}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x16xf32>, tensor<2x8x2x4xf32>
  return %r#0, %r#1 : tensor<2x8x16xf32>, tensor<2x8x2x4xf32>
}

// -----

// Keys are [batch, seq, heads, head_dim].
func.func @qk_mean_key_rank(%qc: tensor<2x8x4x4xf32>, %kc: tensor<2x8x8xf32>,
    %qr: tensor<2x8x4x4xf32>,
    %kr: tensor<2x8x8xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x8xf32>) {
  // expected-error @+1 {{'k_conv' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 3}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x8x8xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x8xf32>
}

// -----

// The query head count is static.
func.func @qk_mean_query_dynamic_heads(%qc: tensor<2x8x?x4xf32>,
    %kc: tensor<2x8x2x4xf32>, %qr: tensor<2x8x?x4xf32>,
    %kr: tensor<2x8x2x4xf32>) -> (tensor<2x8x?x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'q_conv' must have a static head count (dimension 2), got [2, 8, ?, 4]}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x?x4xf32>, tensor<2x8x2x4xf32>
  return %r#0, %r#1 : tensor<2x8x?x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// The key head count is static.
func.func @qk_mean_key_dynamic_heads(%qc: tensor<2x8x4x4xf32>,
    %kc: tensor<2x8x?x4xf32>, %qr: tensor<2x8x4x4xf32>,
    %kr: tensor<2x8x?x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x?x4xf32>) {
  // expected-error @+1 {{'k_conv' must have a static head count (dimension 2), got [2, 8, ?, 4]}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x8x?x4xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x?x4xf32>
}

// -----

// The head dim is static.
func.func @qk_mean_dynamic_head_dim(%qc: tensor<2x8x4x?xf32>,
    %kc: tensor<2x8x2x4xf32>, %qr: tensor<2x8x4x?xf32>,
    %kr: tensor<2x8x2x4xf32>) -> (tensor<2x8x4x?xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'q_conv' must have a static head dim (dimension 3), got [2, 8, 4, ?]}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x?xf32>, tensor<2x8x2x4xf32>
  return %r#0, %r#1 : tensor<2x8x4x?xf32>, tensor<2x8x2x4xf32>
}

// -----

// Query heads are a multiple of key heads.
func.func @qk_mean_heads_not_multiple(%qc: tensor<2x8x3x4xf32>,
    %kc: tensor<2x8x2x4xf32>, %qr: tensor<2x8x3x4xf32>,
    %kr: tensor<2x8x2x4xf32>) -> (tensor<2x8x3x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{the 3 heads of 'q_conv' must be a multiple of the 2 heads of 'k_conv'}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x3x4xf32>, tensor<2x8x2x4xf32>
  return %r#0, %r#1 : tensor<2x8x3x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// At least one key head.
func.func @qk_mean_zero_key_heads(%qc: tensor<2x8x4x4xf32>,
    %kc: tensor<2x8x0x4xf32>, %qr: tensor<2x8x4x4xf32>,
    %kr: tensor<2x8x0x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x0x4xf32>) {
  // expected-error @+1 {{the 4 heads of 'q_conv' must be a multiple of the 0 heads of 'k_conv'}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x8x0x4xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x0x4xf32>
}

// -----

// Keys share the query sequence.
func.func @qk_mean_key_seq(%qc: tensor<2x8x4x4xf32>, %kc: tensor<2x7x2x4xf32>,
    %qr: tensor<2x8x4x4xf32>,
    %kr: tensor<2x7x2x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x7x2x4xf32>) {
  // expected-error @+1 {{'k_conv' must have shape [batch, seq, kv_heads, head_dim] = [2, 8, 2, 4], got [2, 7, 2, 4]}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x7x2x4xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x7x2x4xf32>
}

// -----

// Keys share the query head dim.
func.func @qk_mean_key_head_dim(%qc: tensor<2x8x4x4xf32>,
    %kc: tensor<2x8x2x8xf32>, %qr: tensor<2x8x4x4xf32>,
    %kr: tensor<2x8x2x8xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x8xf32>) {
  // expected-error @+1 {{'k_conv' must have shape [batch, seq, kv_heads, head_dim] = [2, 8, 2, 4], got [2, 8, 2, 8]}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x8x2x8xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x8xf32>
}

// -----

// One element type.
func.func @qk_mean_key_element_type(%qc: tensor<2x8x4x4xf32>,
    %kc: tensor<2x8x2x4xf16>, %qr: tensor<2x8x4x4xf32>,
    %kr: tensor<2x8x2x4xf16>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf16>) {
  // expected-error @+1 {{'k_conv' has element type 'f16', expected 'f32' (the element type of 'q_conv')}}
  %r:2 = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf16>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf16>
}

// -----

// The raw query has the type of q_conv (generic form).
func.func @qk_mean_raw_type_mismatch(%qc: tensor<2x8x4x4xf32>,
    %kc: tensor<2x8x2x4xf32>, %qr: tensor<2x8x4x4xf16>,
    %kr: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{failed to verify that all of {q_conv, q_raw, q} have same type}}
  %r:2 = "attn.qk_mean"(%qc, %kc, %qr, %kr)
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4x4xf16>,
         tensor<2x8x2x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>)
  return %r#0 : tensor<2x8x4x4xf32>
}

// -----

// Queries are [batch, seq, heads, head_dim].
func.func @qk_norm_query_rank(%q: tensor<2x8x4x4x1xf32>,
    %k: tensor<2x8x2x4xf32>,
    %t: tensor<2xf32>) -> (tensor<2x8x4x4x1xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'q' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 5}}
  %r:2 = attn.qk_norm %q, %k, %t
      : tensor<2x8x4x4x1xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  return %r#0, %r#1 : tensor<2x8x4x4x1xf32>, tensor<2x8x2x4xf32>
}

// -----

// Query heads are a multiple of key heads.
func.func @qk_norm_heads_not_multiple(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x3x4xf32>,
    %t: tensor<3xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>) {
  // expected-error @+1 {{the 4 heads of 'q' must be a multiple of the 3 heads of 'k'}}
  %r:2 = attn.qk_norm %q, %k, %t
      : tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>, tensor<3xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>
}

// -----

// Keys share batch, sequence and head dim.
func.func @qk_norm_key_shape(%q: tensor<2x8x4x4xf32>, %k: tensor<1x8x2x4xf32>,
    %t: tensor<2xf32>) -> (tensor<2x8x4x4xf32>, tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'k' must have shape [batch, seq, kv_heads, head_dim] = [2, 8, 2, 4], got [1, 8, 2, 4]}}
  %r:2 = attn.qk_norm %q, %k, %t
      : tensor<2x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<2xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// temp is [kv_heads].
func.func @qk_norm_temp_shape(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %t: tensor<4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'temp' must have shape [kv_heads] = [2], got [4]}}
  %r:2 = attn.qk_norm %q, %k, %t
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<4xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// eps is positive.
func.func @qk_norm_eps_zero(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %t: tensor<2xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{eps must be positive, got 0}}
  %r:2 = attn.qk_norm %q, %k, %t {eps = 0.0 : f64}
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// norm = clamp_eps squares eps in f32: it must not underflow.
func.func @qk_norm_clamp_eps_underflows(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %t: tensor<2xf32>)
    -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{norm = clamp_eps needs eps >= 1.1e-19 (eps^2 must be a normal f32), got 9.9999999999999995E-21}}
  %r:2 = attn.qk_norm %q, %k, %t
      {norm = #attn.norm<clamp_eps>, eps = 1.0e-20 : f64}
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// One element type.
func.func @qk_norm_temp_element_type(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>,
    %t: tensor<2xf16>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'temp' has element type 'f16', expected 'f32' (the element type of 'q')}}
  %r:2 = attn.qk_norm %q, %k, %t
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf16>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// One element type.
func.func @qk_norm_key_element_type(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xbf16>,
    %t: tensor<2xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xbf16>) {
  // expected-error @+1 {{'k' has element type 'bf16', expected 'f32'}}
  %r:2 = attn.qk_norm %q, %k, %t
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xbf16>, tensor<2xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xbf16>
}

// -----

// An unknown temperature mode.
func.func @qk_norm_unknown_temperature(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>,
    %t: tensor<2xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+2 {{expected ::attnfuse::attn::TemperatureMode to be one of: raw, clamped}}
  // expected-error @+1 {{failed to parse Attn_TemperatureModeAttr parameter 'value'}}
  %r:2 = attn.qk_norm %q, %k, %t {temperature = #attn.temperature<softplus>}
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  return %r#0, %r#1 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// -----

// Values are [batch, seq, channels].
func.func @value_shift_current_rank(%c: tensor<2x8x2x2xf32>,
    %p: tensor<2x8x4xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'current' must be a rank-3 tensor [batch, seq, channels], got rank 4}}
  %r = attn.value_shift %c, %p
      : (tensor<2x8x2x2xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The channel count is static.
func.func @value_shift_dynamic_channels(%c: tensor<2x8x?xf32>,
    %p: tensor<2x8x4xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'current' must have a static channel count (dimension 2), got [2, 8, ?]}}
  %r = attn.value_shift %c, %p
      : (tensor<2x8x?xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// Both halves have one shape.
func.func @value_shift_previous_shape(%c: tensor<2x8x4xf32>,
    %p: tensor<2x8x2xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'previous' must have shape [batch, seq, channels] = [2, 8, 4], got [2, 8, 2]}}
  %r = attn.value_shift %c, %p
      : (tensor<2x8x4xf32>, tensor<2x8x2xf32>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The result holds both halves.
func.func @value_shift_result_shape(%c: tensor<2x8x4xf32>,
    %p: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'result' must have shape [batch, seq, 2 * channels] = [2, 8, 8], got [2, 8, 4]}}
  %r = attn.value_shift %c, %p
      : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// -----

// One element type.
func.func @value_shift_previous_element_type(%c: tensor<2x8x4xf32>,
    %p: tensor<2x8x4xf16>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'previous' has element type 'f16', expected 'f32' (the element type of 'current')}}
  %r = attn.value_shift %c, %p
      : (tensor<2x8x4xf32>, tensor<2x8x4xf16>) -> tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The result has the input's element type.
func.func @value_shift_result_element_type(%c: tensor<2x8x4xf32>,
    %p: tensor<2x8x4xf32>) -> tensor<2x8x8xbf16> {
  // expected-error @+1 {{result has element type 'bf16', expected 'f32'}}
  %r = attn.value_shift %c, %p
      : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xbf16>
  return %r : tensor<2x8x8xbf16>
}

// -----

// rope acts on [batch, seq, heads, head_dim].
func.func @rope_rank(%x: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'input' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 3}}
  %r = attn.rope %x {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}

// -----

// The head dim is static.
func.func @rope_dynamic_head_dim(%x: tensor<2x8x2x?xf32>)
    -> tensor<2x8x2x?xf32> {
  // expected-error @+1 {{'input' must have a static head dim (dimension 3), got [2, 8, 2, ?]}}
  %r = attn.rope %x {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x2x?xf32>
  return %r : tensor<2x8x2x?xf32>
}

// -----

// A whole number of rotated dimensions.
func.func @rope_fraction_not_whole(%x: tensor<2x8x2x5xf32>)
    -> tensor<2x8x2x5xf32> {
  // expected-error @+1 {{rope fraction 5.000000e-01 of head_dim 5 is not a whole number of dimensions}}
  %r = attn.rope %x {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : tensor<2x8x2x5xf32>
  return %r : tensor<2x8x2x5xf32>
}

// -----

// An even rotated width.
func.func @rope_odd_width(%x: tensor<2x8x2x3xf32>) -> tensor<2x8x2x3xf32> {
  // expected-error @+1 {{rope rotates 3 dimensions of each head; the rotated width must be even}}
  %r = attn.rope %x {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x2x3xf32>
  return %r : tensor<2x8x2x3xf32>
}

// -----

// The rope attribute is required.
func.func @rope_missing_attr(%x: tensor<2x8x2x4xf32>) -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{requires attribute 'rope'}}
  %r = attn.rope %x : tensor<2x8x2x4xf32>
  return %r : tensor<2x8x2x4xf32>
}

// -----

// rope takes an #attn.rope.
func.func @rope_wrong_attr_kind(%x: tensor<2x8x2x4xf32>)
    -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{attribute 'rope' failed to satisfy constraint: rotary position embedding parameters}}
  %r = attn.rope %x {rope = 10000.0 : f64} : tensor<2x8x2x4xf32>
  return %r : tensor<2x8x2x4xf32>
}

// -----

// The result has the input type (generic form).
func.func @rope_result_type(%x: tensor<2x8x2x4xf32>) -> tensor<2x8x2x4xf16> {
  // expected-error @+1 {{all of {input, result} have same type}}
  %r = "attn.rope"(%x) {rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x8x2x4xf32>) -> tensor<2x8x2x4xf16>
  return %r : tensor<2x8x2x4xf16>
}

// -----

// Queries are [batch, S, heads, head_dim].
func.func @sdpa_query_rank(%q: tensor<2x8x16xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'query' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 3}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x16xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// Keys are [batch, T, heads, head_dim].
func.func @sdpa_key_rank(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x8xf32>,
    %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'key' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 3}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The query head count is static.
func.func @sdpa_query_dynamic_heads(%q: tensor<2x8x?x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x?x4xf32> {
  // expected-error @+1 {{'query' must have a static head count (dimension 2), got [2, 8, ?, 4]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x?x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x?x4xf32>
  return %r : tensor<2x8x?x4xf32>
}

// -----

// The key head count is static.
func.func @sdpa_key_dynamic_heads(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x?x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'key' must have a static head count (dimension 2), got [2, 8, ?, 4]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x?x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The head dim is static.
func.func @sdpa_query_dynamic_head_dim(%q: tensor<2x8x4x?xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'query' must have a static head dim (dimension 3), got [2, 8, 4, ?]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x?xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// Query heads are a multiple of key heads.
func.func @sdpa_heads_not_multiple(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{the 4 heads of 'query' must be a multiple of the 3 heads of 'key'}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// Keys have the query head dim.
func.func @sdpa_key_head_dim(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x6xf32>,
    %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'key' must have shape [batch, T, kv_heads, head_dim] = [2, 8, 2, 4], got [2, 8, 2, 6]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x6xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// Keys have the query batch.
func.func @sdpa_key_batch(%q: tensor<2x8x4x4xf32>, %k: tensor<3x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'key' must have shape [batch, T, kv_heads, head_dim] = [2, 8, 2, 4], got [3, 8, 2, 4]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<3x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// Values are [batch, T, kv_heads, value_dim].
func.func @sdpa_value_rank(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x8xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'value' must be a rank-4 tensor [batch, T, kv_heads, value_dim], got rank 3}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x8xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The value dim is static.
func.func @sdpa_value_dynamic_dim(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x?xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'value' must have a static value dim (dimension 3), got [2, 8, 2, ?]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x?xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// One value per key.
func.func @sdpa_value_keys(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x6x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'value' must have shape [batch, T, kv_heads, value_dim] = [2, 8, 2, 4], got [2, 6, 2, 4]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x6x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// One value head per key head.
func.func @sdpa_value_heads(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'value' must have shape [batch, T, kv_heads, value_dim] = [2, 8, 2, 4], got [2, 8, 4, 4]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The result is [batch, S, num_heads, value_dim].
func.func @sdpa_result_shape(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x6xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'result' must have shape [batch, S, num_heads, value_dim] = [2, 8, 4, 6], got [2, 8, 4, 4]}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x6xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// An [S, T] bias.
func.func @sdpa_bias_2d_shape(%q: tensor<2x1x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>, %b: tensor<8x8xf32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+1 {{'bias' must have shape [S, T] = [1, 8], got [8, 8]}}
  %r = attn.sdpa %q, %k, %v bias(%b)
      : (tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<8x8xf32>) -> tensor<2x1x4x4xf32>
  return %r : tensor<2x1x4x4xf32>
}

// -----

// A [num_heads, S, T] bias.
func.func @sdpa_bias_3d_shape(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>, %b: tensor<2x8x8xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'bias' must have shape [num_heads, S, T] = [4, 8, 8], got [2, 8, 8]}}
  %r = attn.sdpa %q, %k, %v bias(%b)
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x8xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The bias is rank 2 or 3.
func.func @sdpa_bias_rank(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>, %b: tensor<8xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'bias' must be [S, T] or [num_heads, S, T], got rank 1}}
  %r = attn.sdpa %q, %k, %v bias(%b)
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The window is a positive number of keys.
func.func @sdpa_window_negative(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{window must be a positive number of keys, got -1}}
  %r = attn.sdpa %q, %k, %v {causal, window = -1 : i64}
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The scale is positive.
func.func @sdpa_scale_zero(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{scale must be a positive finite number}}
  %r = attn.sdpa %q, %k, %v {scale = 0.0 : f64}
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The scale is a number.
func.func @sdpa_scale_nan(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{scale must be a positive finite number}}
  %r = attn.sdpa %q, %k, %v {scale = 0x7FF8000000000000 : f64}
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// One element type.
func.func @sdpa_key_element_type(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf16>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'key' has element type 'f16', expected 'f32' (the element type of 'query')}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf16>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// One element type.
func.func @sdpa_value_element_type(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xbf16>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'value' has element type 'bf16', expected 'f32'}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xbf16>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// One element type.
func.func @sdpa_bias_element_type(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>,
    %b: tensor<8x8xf16>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'bias' has element type 'f16', expected 'f32'}}
  %r = attn.sdpa %q, %k, %v bias(%b)
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<8x8xf16>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The result has the query's element type.
func.func @sdpa_result_element_type(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf16> {
  // expected-error @+1 {{result has element type 'f16', expected 'f32'}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf16>
  return %r : tensor<2x8x4x4xf16>
}

// -----

// Values are floating point.
func.func @sdpa_integer_value(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
    %v: tensor<2x8x2x4xi32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{operand #2 must be ranked tensor of floating-point values, but got 'tensor<2x8x2x4xi32>'}}
  %r = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xi32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// The window is an integer.
func.func @sdpa_window_not_integer(%q: tensor<2x8x4x4xf32>,
    %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute}}
  %r = attn.sdpa %q, %k, %v {window = 4.0 : f64}
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// K=V caches one tensor.
func.func @qkv_decode_kv_two_caches(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %vc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{sharing mode 'kv' caches one tensor (the shared key/value); 'cache' takes one operand, got two}}
  %r0, %r1, %r2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc, %vc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// Separate K and V need two caches.
func.func @qkv_decode_none_one_cache(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{sharing mode 'none' caches keys and values; 'cache' takes two operands (key, value), got one}}
  %r0, %r1 = attn.qkv_decode <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// Each cache comes back updated.
func.func @qkv_decode_missing_value_result(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %vc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{the updated value cache is returned exactly when a value cache is given}}
  %r0, %r1 = attn.qkv_decode <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) cache(%kc, %vc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// The sharing mode's projections are checked as for qkv_attention.
func.func @qkv_decode_missing_wq(%x: tensor<2x1x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %vc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{sharing mode 'none' needs a query projection 'wq'}}
  %r0, %r1, %r2 = attn.qkv_decode <none> %x wk(%wk) wv(%wv) wo(%wo) cache(%kc, %vc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// The result has the input's shape.
func.func @qkv_decode_result_shape(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'result' must have shape [batch, seq, E] = [2, 1, 16], got [2, 2, 16]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x2x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// Positions are one per sequence.
func.func @qkv_decode_positions_rank(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<2x1xi32>) {
  // expected-error @+1 {{'positions' must be a rank-1 tensor [batch], got rank 2}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2x1xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// Positions are one per sequence.
func.func @qkv_decode_positions_batch(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<3xi32>) {
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [3]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<3xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// Positions are integers.
func.func @qkv_decode_positions_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<2xf32>) {
  // expected-error @+1 {{must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2xf32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// Lengths are one per sequence.
func.func @qkv_decode_lengths_batch(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>, %len: tensor<4xi32>) {
  // expected-error @+1 {{'lengths' must have shape [batch] = [2], got [4]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos) lengths(%len)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>, tensor<4xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

// A contiguous cache is [batch, capacity, kv_heads, head_dim].
func.func @qkv_decode_cache_rank(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x8xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'key_cache' must be a rank-4 tensor [batch, capacity, kv_heads, head_dim], got rank 3}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x8xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x8xf32>)
  return
}

// -----

// A contiguous cache has a row block per sequence.
func.func @qkv_decode_cache_batch(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<3x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'key_cache' must have shape [batch, capacity, kv_heads, head_dim] = [2, ?, 2, 4], got [3, 16, 2, 4]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<3x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<3x16x2x4xf32>)
  return
}

// -----

// The cache's head count is static.
func.func @qkv_decode_cache_dynamic_heads(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x?x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'key_cache' must have a static kv head count (dimension 2), got [2, 16, ?, 4]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x?x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x?x4xf32>)
  return
}

// -----

// A paged cache is [num_pages, page_size, kv_heads, head_dim].
func.func @qkv_decode_paged_heads(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<8x4x1x4xf32>, %pos: tensor<2xi32>, %bt: tensor<2x4xi32>) {
  // expected-error @+1 {{'key_cache' must have shape [num_pages, page_size, kv_heads, head_dim] = [?, ?, 2, 4], got [8, 4, 1, 4]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x4x1x4xf32>, tensor<2xi32>, tensor<2x4xi32>)
      -> (tensor<2x1x16xf32>, tensor<8x4x1x4xf32>)
  return
}

// -----

// A block table lists the pages of each sequence.
func.func @qkv_decode_block_table_rank(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %bt: tensor<8xi32>) {
  // expected-error @+1 {{'block_table' must be a rank-2 tensor [batch, pages_per_sequence], got rank 1}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<8xi32>)
      -> (tensor<2x1x16xf32>, tensor<8x4x2x4xf32>)
  return
}

// -----

// A block table has a row per sequence.
func.func @qkv_decode_block_table_batch(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %bt: tensor<3x4xi32>) {
  // expected-error @+1 {{'block_table' must have shape [batch, pages_per_sequence] = [2, ?], got [3, 4]}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<3x4xi32>)
      -> (tensor<2x1x16xf32>, tensor<8x4x2x4xf32>)
  return
}

// -----

// The updated cache has the cache's type.
func.func @qkv_decode_cache_result_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{result 'key_cache' must have the type 'tensor<2x16x2x4xf32>' of 'key_cache', got 'tensor<2x?x2x4xf32>'}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x?x2x4xf32>)
  return
}

// -----

// Key and value caches have one type.
func.func @qkv_decode_value_cache_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xf32>, %vc: tensor<2x8x2x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'value_cache' must have the type 'tensor<2x16x2x4xf32>' of 'key_cache', got 'tensor<2x8x2x4xf32>'}}
  %r0, %r1, %r2 = attn.qkv_decode <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) cache(%kc, %vc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xf32>, tensor<2x8x2x4xf32>)
  return
}

// -----

// The cache holds the layer's element type.
func.func @qkv_decode_cache_element_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x16x2x4xbf16>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'key_cache' has element type 'bf16', expected 'f32' (the element type of 'input')}}
  %r0, %r1 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x16x2x4xbf16>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x2x4xbf16>)
  return
}

// -----

// The conv state holds the last P pre-conv vectors.
func.func @cca_decode_conv_state_shape(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x1x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'conv_state' must have shape [batch, (k0 - 1) + (k1 - 1), (num_heads + num_kv_heads) * head_dim] = [2, 2, 12], got [2, 1, 12]}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x1x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x1x12xf32>, tensor<2x1x2xf32>)
  return
}

// -----

// value_shift keeps the previous token's value half.
func.func @cca_decode_missing_shift_state(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x2x12xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{value_shift needs the previous token's value half: 'shift_state' is missing}}
  %r0, %r1, %r2, %r3 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>)
  return
}

// -----

// Without value_shift there is no shift state.
func.func @cca_decode_stray_shift_state(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<4x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'shift_state' is given but value_shift is not set}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x2xf32>)
  return
}

// -----

// The shift state is one value half per sequence.
func.func @cca_decode_shift_state_shape(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'shift_state' must have shape [batch, 1, num_kv_heads * head_dim / 2] = [2, 1, 2], got [2, 1, 4]}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x4xf32>)
  return
}

// -----

// The shift state comes back updated.
func.func @cca_decode_missing_shift_result(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{the updated shift state is returned exactly when a shift state is given}}
  %r0, %r1, %r2, %r3 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>)
  return
}

// -----

// The updated conv state has the state's type.
func.func @cca_decode_conv_state_result(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{result 'conv_state' must have the type 'tensor<2x2x12xf32>' of 'conv_state', got 'tensor<2x2x12xbf16>'}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xbf16>, tensor<2x1x2xf32>)
  return
}

// -----

// The layer parameters are checked as for attn.cca.
func.func @cca_decode_missing_wv_prev(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>, %kc: tensor<2x16x1x4xf32>, %vc: tensor<2x16x1x4xf32>, %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{value_shift needs the previous-token projection 'wv_prev'}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x2x12xf32>, tensor<2x1x2xf32>)
  return
}

// -----

// New rows are [batch, T, kv_heads, head_dim].
func.func @cache_update_rows_rank(%c: tensor<2x16x2x4xf32>, %k: tensor<2x1x8xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'new_rows' must be a rank-4 tensor [batch, T, kv_heads, head_dim], got rank 3}}
  %0 = attn.cache_update %c, %k positions(%p) : (tensor<2x16x2x4xf32>, tensor<2x1x8xf32>, tensor<2xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// New rows match the cache's heads and head dim.
func.func @cache_update_heads(%c: tensor<2x16x2x4xf32>, %k: tensor<2x1x1x4xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'cache' must have shape [batch, capacity, kv_heads, head_dim] = [2, ?, 1, 4], got [2, 16, 2, 4]}}
  %0 = attn.cache_update %c, %k positions(%p) : (tensor<2x16x2x4xf32>, tensor<2x1x1x4xf32>, tensor<2xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// Positions are one per sequence.
func.func @cache_update_positions(%c: tensor<2x16x2x4xf32>, %k: tensor<2x1x2x4xf32>, %p: tensor<1xi32>) {
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [1]}}
  %0 = attn.cache_update %c, %k positions(%p) : (tensor<2x16x2x4xf32>, tensor<2x1x2x4xf32>, tensor<1xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// Lengths are one per sequence.
func.func @cache_update_lengths_rank(%c: tensor<2x16x2x4xf32>, %k: tensor<2x1x2x4xf32>, %p: tensor<2xi32>, %l: tensor<2x1xi32>) {
  // expected-error @+1 {{'lengths' must be a rank-1 tensor [batch], got rank 2}}
  %0 = attn.cache_update %c, %k positions(%p) lengths(%l) : (tensor<2x16x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x1xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// Rows and cache share an element type.
func.func @cache_update_element_type(%c: tensor<2x16x2x4xf32>, %k: tensor<2x1x2x4xbf16>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'new_rows' has element type 'bf16', expected 'f32' (the element type of 'cache')}}
  %0 = attn.cache_update %c, %k positions(%p) : (tensor<2x16x2x4xf32>, tensor<2x1x2x4xbf16>, tensor<2xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// The result is the updated cache.
func.func @cache_update_result_type(%c: tensor<2x16x2x4xf32>, %k: tensor<2x1x2x4xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{all of {cache, result} have same type}}
  %0 = attn.cache_update %c, %k positions(%p) : (tensor<2x16x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>) -> tensor<2x?x2x4xf32>
  return
}

// -----

// The view holds pages_per_sequence * page_size rows.
func.func @cache_gather_result(%c: tensor<8x4x2x4xf32>, %bt: tensor<2x4xi32>) {
  // expected-error @+1 {{'result' must have shape [batch, pages_per_sequence * page_size, kv_heads, head_dim] = [2, 16, 2, 4], got [2, 12, 2, 4]}}
  %0 = attn.cache_gather %c block_table(%bt) : (tensor<8x4x2x4xf32>, tensor<2x4xi32>) -> tensor<2x12x2x4xf32>
  return
}

// -----

// A paged cache is [num_pages, page_size, kv_heads, head_dim].
func.func @cache_gather_cache_rank(%c: tensor<8x4x8xf32>, %bt: tensor<2x4xi32>) {
  // expected-error @+1 {{'cache' must be a rank-4 tensor [num_pages, page_size, kv_heads, head_dim], got rank 3}}
  %0 = attn.cache_gather %c block_table(%bt) : (tensor<8x4x8xf32>, tensor<2x4xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// A block table lists the pages of each sequence.
func.func @cache_gather_table_rank(%c: tensor<8x4x2x4xf32>, %bt: tensor<8xi32>) {
  // expected-error @+1 {{'block_table' must be a rank-2 tensor [batch, pages_per_sequence], got rank 1}}
  %0 = attn.cache_gather %c block_table(%bt) : (tensor<8x4x2x4xf32>, tensor<8xi32>) -> tensor<2x16x2x4xf32>
  return
}

// -----

// The view has the cache's element type.
func.func @cache_gather_element_type(%c: tensor<8x4x2x4xf32>, %bt: tensor<2x4xi32>) {
  // expected-error @+1 {{'result' has element type 'bf16', expected 'f32' (the element type of 'cache')}}
  %0 = attn.cache_gather %c block_table(%bt) : (tensor<8x4x2x4xf32>, tensor<2x4xi32>) -> tensor<2x16x2x4xbf16>
  return
}

// -----

// A state is [batch, P, channels].
func.func @state_update_rank(%s: tensor<2x12xf32>, %u: tensor<2x1x12xf32>) {
  // expected-error @+1 {{'state' must be a rank-3 tensor [batch, P, channels], got rank 2}}
  %0 = attn.state_update %s, %u : (tensor<2x12xf32>, tensor<2x1x12xf32>) -> tensor<2x12xf32>
  return
}

// -----

// The number of state rows is static.
func.func @state_update_dynamic_rows(%s: tensor<2x?x12xf32>, %u: tensor<2x1x12xf32>) {
  // expected-error @+1 {{'state' must have a static row count P (dimension 1), got [2, ?, 12]}}
  %0 = attn.state_update %s, %u : (tensor<2x?x12xf32>, tensor<2x1x12xf32>) -> tensor<2x?x12xf32>
  return
}

// -----

// New rows have the state's channels.
func.func @state_update_channels(%s: tensor<2x2x12xf32>, %u: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'new_rows' must have shape [batch, T, channels] = [2, ?, 12], got [2, 1, 8]}}
  %0 = attn.state_update %s, %u : (tensor<2x2x12xf32>, tensor<2x1x8xf32>) -> tensor<2x2x12xf32>
  return
}

// -----

// Lengths are one per sequence.
func.func @state_update_lengths(%s: tensor<2x2x12xf32>, %u: tensor<2x1x12xf32>, %l: tensor<3xi64>) {
  // expected-error @+1 {{'lengths' must have shape [batch] = [2], got [3]}}
  %0 = attn.state_update %s, %u lengths(%l) : (tensor<2x2x12xf32>, tensor<2x1x12xf32>, tensor<3xi64>) -> tensor<2x2x12xf32>
  return
}

// -----

// New rows have the state's element type.
func.func @state_update_element_type(%s: tensor<2x2x12xf32>, %u: tensor<2x1x12xf16>) {
  // expected-error @+1 {{'new_rows' has element type 'f16', expected 'f32' (the element type of 'state')}}
  %0 = attn.state_update %s, %u : (tensor<2x2x12xf32>, tensor<2x1x12xf16>) -> tensor<2x2x12xf32>
  return
}

// -----

// RoPE positions are one per sequence.
func.func @rope_positions_batch(%q: tensor<2x1x4x8xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [3]}}
  %0 = attn.rope %q positions(%p : tensor<3xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<2x1x4x8xf32>
  return
}

// -----

// RoPE positions are one per sequence.
func.func @rope_positions_rank(%q: tensor<2x1x4x8xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{'positions' must be a rank-1 tensor [batch], got rank 0}}
  %0 = attn.rope %q positions(%p : tensor<i32>) {rope = #attn.rope<theta = 10000.0>} : tensor<2x1x4x8xf32>
  return
}

// -----

// Query positions are one per sequence.
func.func @sdpa_positions_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x16x2x8xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [4]}}
  %0 = attn.sdpa %q, %k, %k positions(%p) {causal} : (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<4xi32>) -> tensor<2x1x4x8xf32>
  return
}

// -----

// The shift state is one row per sequence.
func.func @value_shift_state_shape(%c: tensor<2x3x4xf32>, %p: tensor<2x3x4xf32>, %s: tensor<2x2x4xf32>) {
  // expected-error @+1 {{'state' must have shape [batch, 1, channels] = [2, 1, 4], got [2, 2, 4]}}
  %0 = attn.value_shift %c, %p state(%s) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x2x4xf32>) -> tensor<2x3x8xf32>
  return
}

// -----

// A padding mask is [batch, seq].
func.func @cca_padding_mask_rank(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %wo: tensor<16x16xf32>, %m: tensor<16xi32>) {
  // expected-error @+1 {{'padding_mask' must be a rank-2 tensor [batch, seq], got rank 1}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo) padding_mask(%m)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>, tensor<16xi32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @cca_padding_mask_seq(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %wo: tensor<16x16xf32>, %m: tensor<2x7xi32>) {
  // expected-error @+1 {{'padding_mask' must have shape [batch, seq] = [2, 8], got [2, 7]}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo) padding_mask(%m)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>, tensor<2x7xi32>) -> tensor<2x8x16xf32>
  return
}

// -----

// The mask is an integer tensor.
func.func @cca_padding_mask_float(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %wo: tensor<16x16xf32>, %m: tensor<2x8xf32>) {
  // expected-error @+1 {{operand #10 must be ranked tensor of signless integer values, but got 'tensor<2x8xf32>'}}
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo) padding_mask(%m)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>, tensor<2x8xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @mask_tokens_input_rank(%x: tensor<2x8xf32>, %m: tensor<2x8xi32>) {
  // expected-error @+1 {{'input' must be a rank-3 tensor [batch, seq, width], got rank 2}}
  %0 = attn.mask_tokens %x, %m : tensor<2x8xf32>, tensor<2x8xi32>
  return
}

// -----

func.func @mask_tokens_mask_rank(%x: tensor<2x8x4xf32>, %m: tensor<2x8x1xi32>) {
  // expected-error @+1 {{'mask' must be a rank-2 tensor [batch, seq], got rank 3}}
  %0 = attn.mask_tokens %x, %m : tensor<2x8x4xf32>, tensor<2x8x1xi32>
  return
}

// -----

func.func @mask_tokens_mask_batch(%x: tensor<2x8x4xf32>, %m: tensor<3x8xi32>) {
  // expected-error @+1 {{'mask' must have shape [batch, seq] = [2, 8], got [3, 8]}}
  %0 = attn.mask_tokens %x, %m : tensor<2x8x4xf32>, tensor<3x8xi32>
  return
}

// -----

// The key mask follows the keys: [batch, T].
func.func @sdpa_key_mask_keys(%q: tensor<2x1x4x8xf32>, %k: tensor<2x16x2x8xf32>, %m: tensor<2x1xi64>) {
  // expected-error @+1 {{'key_mask' must have shape [batch, T] = [2, 16], got [2, 1]}}
  %0 = attn.sdpa %q, %k, %k key_mask(%m) : (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2x1xi64>) -> tensor<2x1x4x8xf32>
  return
}

// -----

func.func @sdpa_key_mask_rank(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %m: tensor<16xi64>) {
  // expected-error @+1 {{'key_mask' must be a rank-2 tensor [batch, T], got rank 1}}
  %0 = attn.sdpa %q, %k, %k key_mask(%m) : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<16xi64>) -> tensor<2x16x4x8xf32>
  return
}

// -----

func.func @flash_attention_key_mask_batch(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %m: tensor<1x16xi32>) {
  %init = tensor.empty() : tensor<2x16x4x8xf32>
  // expected-error @+1 {{'key_mask' must have shape [batch, T] = [2, 16], got [1, 16]}}
  %0 = attn.flash_attention %q, %k key_mask(%m) outs(%init) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<1x16xi32>, tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32>
  return
}

// -----

func.func @cca_prologue_padding_mask_seq(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %m: tensor<2x9xi32>) {
  %cp_init0 = tensor.empty() : tensor<2x8x4x4xf32>
  %cp_init1 = tensor.empty() : tensor<2x8x2x4xf32>
  %cp_init2 = tensor.empty() : tensor<2x8x2x4xf32>
  // expected-error @+1 {{'padding_mask' must have shape [batch, seq] = [2, 8], got [2, 9]}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) padding_mask(%m)
      outs(%cp_init0, %cp_init1, %cp_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, block_s = 64 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x9xi32>, tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>)
  return
}

// -----

func.func @cca_prologue_outs_count(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %qi: tensor<2x8x4x4xf32>, %ki: tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{takes one 'outs' per result (query, key, value), got 2}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%qi, %ki) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, block_s = 64 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>)
  return
}

// -----

func.func @cca_prologue_outs_type(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %qi: tensor<2x8x4x4xf32>, %ki: tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'outs' #2 must have the type 'tensor<2x8x2x4xf32>' of result #2, got 'tensor<2x8x4x4xf32>'}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%qi, %ki, %qi) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, block_s = 64 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>)
  return
}

// -----

func.func @cca_prologue_token_offset_tokens(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %t: index, %qi: tensor<2x9x4x4xf32>, %ki: tensor<2x9x2x4xf32>) {
  // expected-error @+1 {{with 'token_offset' the results' 9 tokens must be at most the input's 8}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) token_offset(%t)
      outs(%qi, %ki, %ki) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, block_s = 64 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, index, tensor<2x9x4x4xf32>, tensor<2x9x2x4xf32>, tensor<2x9x2x4xf32>) -> (tensor<2x9x4x4xf32>, tensor<2x9x2x4xf32>, tensor<2x9x2x4xf32>)
  return
}

// -----

func.func @cca_prologue_token_offset_key_tokens(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %t: index, %qi: tensor<2x4x4x4xf32>, %ki: tensor<2x3x2x4xf32>, %vi: tensor<2x4x2x4xf32>) {
  // expected-error @+1 {{'key' must have shape [batch, the query's tokens, num_kv_heads, head_dim] = [2, 4, 2, 4], got [2, 3, 2, 4]}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) token_offset(%t)
      outs(%qi, %ki, %vi) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, block_s = 64 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, index, tensor<2x4x4x4xf32>, tensor<2x3x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x3x2x4xf32>, tensor<2x4x2x4xf32>)
  return
}

// -----

func.func @flash_attention_init_type(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %init: tensor<2x16x4x4xf32>) {
  // expected-error @+1 {{'init' must have the result type 'tensor<2x16x4x8xf32>', got 'tensor<2x16x4x4xf32>'}}
  %0 = attn.flash_attention %q, %k outs(%init) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x8xf32>
  return
}

// -----

func.func @flash_attention_query_rows_offset_only(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %init: tensor<2x16x4x8xf32>, %offset: index) {
  // expected-error @+1 {{'query_rows' takes an offset and a count}}
  %0 = "attn.flash_attention"(%q, %k, %offset, %init) <{block_q = 64 : i64, block_kv = 64 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 1, 0, 1, 0>}> : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, index, tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32>
  return
}

// -----

func.func @fused_projection_init_type(%x: tensor<2x8x16xf32>, %w: tensor<16x16xf32>, %init: tensor<2x8x4x4xf16>) {
  // expected-error @+1 {{'init' must have the result type 'tensor<2x8x4x4xf32>', got 'tensor<2x8x4x4xf16>'}}
  %0 = attn.fused_projection %x, %w outs(%init) {head_dim = 4 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<2x8x4x4xf16>) -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @fused_projection_transposed_weight_shape(%dy: tensor<2x8x8xf32>, %w: tensor<16x8xf32>, %init: tensor<2x8x1x8xf32>) {
  // expected-error @+1 {{'weight' must have shape [E, heads * head_dim] = [8, 8], got [16, 8]}}
  %0 = attn.fused_projection %dy, %w outs(%init) {head_dim = 8 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64, transposed_weight} : (tensor<2x8x8xf32>, tensor<16x8xf32>, tensor<2x8x1x8xf32>) -> tensor<2x8x1x8xf32>
  return
}

// -----

func.func @sdpa_lse_shape(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{'lse' must have shape [batch, S, num_heads] = [2, 8, 4], got [2, 4, 8]}}
  %o, %lse = attn.sdpa %q, %k, %k : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @sdpa_lse_element_type(%q: tensor<2x8x4x4xbf16>, %k: tensor<2x8x2x4xbf16>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values}}
  %o, %lse = attn.sdpa %q, %k, %k : (tensor<2x8x4x4xbf16>, tensor<2x8x2x4xbf16>, tensor<2x8x2x4xbf16>) -> (tensor<2x8x4x4xbf16>, tensor<2x8x4xbf16>)
  return
}

// -----

func.func @flash_attention_lse_without_init(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %init: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{has an 'lse' result exactly when it has an 'lse_init'}}
  %0:2 = "attn.flash_attention"(%q, %k, %init) <{block_q = 64 : i64, block_kv = 64 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 1, 0>}> : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x4xf32>)
  return
}

// -----

func.func @flash_attention_lse_init_type(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %init: tensor<2x16x4x8xf32>, %lse_init: tensor<2x?x4xf32>) {
  // expected-error @+1 {{'lse_init' must have the type 'tensor<2x16x4xf32>' of result 'lse', got 'tensor<2x?x4xf32>'}}
  %0:2 = attn.flash_attention %q, %k outs(%init, %lse_init) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32>, tensor<2x?x4xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x4xf32>)
  return
}

// -----

func.func @flash_attention_lse_init_shape(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %init: tensor<2x16x4x8xf32>, %lse_init: tensor<2x16x2xf32>) {
  // expected-error @+1 {{'lse_init' must have shape [batch, S, num_heads] = [2, 16, 4], got [2, 16, 2]}}
  %0:2 = attn.flash_attention %q, %k outs(%init, %lse_init) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x2xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x2xf32>)
  return
}
