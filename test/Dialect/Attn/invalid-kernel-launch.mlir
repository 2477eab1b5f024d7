// RUN: attnfuse-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the #attn.kernel_launch, #attn.kernel_param and
// #attn.kernel_tensor verifiers.

// expected-error @+1 {{a kernel parameter needs a name}}
func.func private @param_name() attributes {a = #attn.kernel_param<name = "", kind = "scalar">}

// -----

// expected-error @+1 {{kernel parameter 'n' has kind 'buffer' (tma_descriptor, pointer or scalar)}}
func.func private @param_kind() attributes {a = #attn.kernel_param<name = "n", kind = "buffer">}

// -----

// expected-error @+1 {{a kernel tensor needs a name}}
func.func private @tensor_name() attributes {a = #attn.kernel_tensor<name = "", role = "input", operand = 0, dtype = "bf16", shape = [4], layout = "contiguous">}

// -----

// expected-error @+1 {{kernel tensor 'x' names operand -2 (an operand index, or -1 for a result)}}
func.func private @tensor_operand() attributes {a = #attn.kernel_tensor<name = "x", role = "input", operand = -2, dtype = "bf16", shape = [4], layout = "contiguous">}

// -----

// expected-error @+1 {{kernel tensor 'x' has sizes that are neither integers nor size expressions}}
func.func private @tensor_sizes() attributes {a = #attn.kernel_tensor<name = "x", role = "input", operand = 0, dtype = "bf16", shape = [4.0], layout = "contiguous">}

// -----

// expected-error @+1 {{kernel tensor 'x' has 1 strides for 2 dimensions}}
func.func private @tensor_strides() attributes {a = #attn.kernel_tensor<name = "x", role = "input", operand = 0, dtype = "bf16", shape = [4, 4], strides = [1], layout = "contiguous">}

// -----

// expected-error @+1 {{a kernel launch needs a kernel name}}
func.func private @launch_kernel() attributes {a = #attn.kernel_launch<kernel = "", kind = "k", symbols = "", block = [128, 1, 1], grid = [], dynamic_smem_bytes = 0, params = [], tensors = [], tma_descriptors = [], config = {}>}

// -----

// expected-error @+1 {{kernel launch 'k' needs a block of three positive sizes}}
func.func private @launch_block() attributes {a = #attn.kernel_launch<kernel = "k", kind = "k", symbols = "", block = [128, 0, 1], grid = [], dynamic_smem_bytes = 0, params = [], tensors = [], tma_descriptors = [], config = {}>}

// -----

// expected-error @+1 {{kernel launch 'k' has negative dynamic shared memory}}
func.func private @launch_smem() attributes {a = #attn.kernel_launch<kernel = "k", kind = "k", symbols = "", block = [128, 1, 1], grid = [], dynamic_smem_bytes = -1, params = [], tensors = [], tma_descriptors = [], config = {}>}

// -----

// expected-error @+1 {{kernel launch 'k': params must be #attn.kernel_param}}
func.func private @launch_params() attributes {a = #attn.kernel_launch<kernel = "k", kind = "k", symbols = "", block = [128, 1, 1], grid = [], dynamic_smem_bytes = 0, params = [{name = "x"}], tensors = [], tma_descriptors = [], config = {}>}

// -----

// expected-error @+1 {{kernel launch 'k': tensors must be #attn.kernel_tensor}}
func.func private @launch_tensors() attributes {a = #attn.kernel_launch<kernel = "k", kind = "k", symbols = "", block = [128, 1, 1], grid = [], dynamic_smem_bytes = 0, params = [], tensors = [{name = "x"}], tma_descriptors = [], config = {}>}
