// RUN: attnfuse-opt %s | attnfuse-opt | FileCheck %s
// RUN: attnfuse-opt %s --mlir-print-op-generic | attnfuse-opt | FileCheck %s

// The launch descriptions of convert-attn-kernels-to-nvvm round-trip: every
// parameter, the optional ones present and absent.

// CHECK-LABEL: func.func private @elementwise_launch
// CHECK-SAME: attnfuse.launch = #attn.kernel_launch<kernel = "attn_ewise_add_bf16", kind = "elementwise", symbols = "B = batch, S = dimension 1", block = [256, 1, 1], grid = [{expr = "ceil_div(256*B*S, 2048)"}], dynamic_smem_bytes = 0
// CHECK-SAME: params = [#attn.kernel_param<name = "lhs", kind = "pointer", detail = "bf16", value = "lhs">, #attn.kernel_param<name = "count", kind = "scalar", detail = "i32", value = "256*B*S">]
// CHECK-SAME: tensors = [#attn.kernel_tensor<name = "lhs", role = "input", operand = 0, dtype = "bf16", shape = ["B", "S", 256], layout = "row-major, contiguous">, #attn.kernel_tensor<name = "output", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S", 256], strides = ["256*S", 256, 1], layout = "row-major, contiguous">]
// CHECK-SAME: tma_descriptors = [], config = {op = "add"}>
// CHECK-NOT: host_cast
func.func private @elementwise_launch(tensor<?x?x256xbf16>) -> tensor<?x?x256xbf16>
    attributes {attnfuse.launch = #attn.kernel_launch<
      kernel = "attn_ewise_add_bf16", kind = "elementwise",
      symbols = "B = batch, S = dimension 1", block = [256, 1, 1],
      grid = [{expr = "ceil_div(256*B*S, 2048)"}], dynamic_smem_bytes = 0,
      params = [#attn.kernel_param<name = "lhs", kind = "pointer", detail = "bf16", value = "lhs">,
                #attn.kernel_param<name = "count", kind = "scalar", detail = "i32", value = "256*B*S">],
      tensors = [#attn.kernel_tensor<name = "lhs", role = "input", operand = 0, dtype = "bf16",
                                     shape = ["B", "S", 256], layout = "row-major, contiguous">,
                 #attn.kernel_tensor<name = "output", role = "result", operand = -1, dtype = "bf16",
                                     shape = ["B", "S", 256], strides = ["256*S", 256, 1],
                                     layout = "row-major, contiguous">],
      tma_descriptors = [], config = {op = "add"}>}

// CHECK-LABEL: func.func private @decode_split_launch
// CHECK-SAME: rope_tables = [{param = "rope_cos"}], host_cast = "the op's tensors are f32"
// CHECK-SAME: aliases = [{result = "cache_out", tensor = "cache"}]
// CHECK-SAME: then = "attn_flash_decode_combine", workspace = {tensor = "workspace"}, config = {stages = 2 : i64}>
// CHECK-SAME: #attn.kernel_tensor<name = "state_out", role = "state_result", operand = -1, dtype = "bf16", shape = ["B"], layout = "row-major, contiguous", updates = "state">
func.func private @decode_split_launch()
    attributes {attnfuse.launch = #attn.kernel_launch<
      kernel = "attn_flash_decode", kind = "flash_decode_split", symbols = "B = batch",
      block = [128, 1, 1], grid = [{value = 4 : i64}], dynamic_smem_bytes = 1024,
      params = [#attn.kernel_param<name = "tma_k", kind = "tma_descriptor", detail = "tma_k">],
      tensors = [], tma_descriptors = [{param = "tma_k"}],
      rope_tables = [{param = "rope_cos"}], host_cast = "the op's tensors are f32",
      aliases = [{result = "cache_out", tensor = "cache"}],
      then = "attn_flash_decode_combine", workspace = {tensor = "workspace"},
      config = {stages = 2 : i64}>,
      attnfuse.state = #attn.kernel_tensor<name = "state_out", role = "state_result", operand = -1,
                                           dtype = "bf16", shape = ["B"], layout = "row-major, contiguous",
                                           updates = "state">}
