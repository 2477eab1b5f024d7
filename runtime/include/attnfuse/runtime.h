/*
 * AttnFuse GPU runtime: C API.
 *
 * Loads the kernels that `attnfuse-compile --target=sm_90a` writes (NAME.cubin / NAME.ptx +
 * manifest.json), encodes their TMA descriptors from the caller's buffers and launches them
 * through the CUDA driver API. The driver is loaded at run time with dlopen("libcuda.so.1"):
 * the library links against nothing from CUDA, and on a machine without the driver every call
 * that needs it returns AFR_ERR_NO_DRIVER ("no CUDA driver (libcuda.so.1 not found)").
 *
 * Everything up to the launch (manifest parsing, grid evaluation, buffer validation, the
 * cuTensorMapEncodeTiled arguments, the kernel-argument layout) is host-only and usable
 * without a GPU.
 *
 * Errors: every function that can fail returns an afr_status; the message of the last failure
 * on the calling thread is afr_last_error() (empty after a success).
 */
#ifndef ATTNFUSE_RUNTIME_H
#define ATTNFUSE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define AFR_API __declspec(dllexport)
#else
#define AFR_API __attribute__((visibility("default")))
#endif

typedef enum afr_status {
  AFR_OK = 0,
  AFR_ERR_INVALID_ARGUMENT = 1, /* null handle, index out of range, bad sizes */
  AFR_ERR_IO = 2,               /* a file could not be read */
  AFR_ERR_MANIFEST = 3,         /* manifest is not valid JSON or misses a field */
  AFR_ERR_NOT_FOUND = 4,        /* no kernel / tensor / parameter of that name */
  AFR_ERR_VALIDATION = 5,       /* caller's buffers do not match the manifest */
  AFR_ERR_NO_DRIVER = 6,        /* libcuda.so.1 missing or an entry point missing */
  AFR_ERR_CUDA = 7              /* a driver call failed (message has the CUDA error name) */
} afr_status;

typedef enum afr_dtype {
  AFR_DTYPE_INVALID = 0,
  AFR_DTYPE_BF16 = 1,
  AFR_DTYPE_F16 = 2,
  AFR_DTYPE_F32 = 3,
  AFR_DTYPE_I32 = 4,
  AFR_DTYPE_I64 = 5,
  AFR_DTYPE_U8 = 6
} afr_dtype;

#define AFR_MAX_RANK 8

/* Values of the dynamic symbols of the manifest: B = batch, S = query length, T = key length. */
typedef struct afr_sizes {
  int64_t B;
  int64_t S;
  int64_t T;
} afr_sizes;

/* One caller buffer, bound to a manifest tensor (or pointer parameter) by name. */
typedef struct afr_tensor {
  const char *name;  /* manifest tensor name: "query", "key", "value", "output", "input", ... */
  uint64_t data;     /* device address (CUdeviceptr) */
  afr_dtype dtype;
  int32_t rank;
  int64_t shape[AFR_MAX_RANK];
  int64_t strides[AFR_MAX_RANK]; /* in elements */
} afr_tensor;

/* The arguments the runtime passes to cuTensorMapEncodeTiled for one descriptor. The enum
 * fields hold the numeric CUtensorMap* values of cuda.h. */
typedef struct afr_tma_params {
  char param[64];  /* kernel parameter name, e.g. "tma_q" */
  char tensor[64]; /* tensor it maps, e.g. "query" */
  uint32_t data_type;  /* CUtensorMapDataType */
  uint32_t rank;
  uint64_t global_address;
  uint64_t global_dim[5];
  uint64_t global_strides[4]; /* bytes, rank - 1 entries (dim 0 is implicitly element size) */
  uint32_t box_dim[5];
  uint32_t element_strides[5];
  uint32_t interleave;   /* CUtensorMapInterleave */
  uint32_t swizzle;      /* CUtensorMapSwizzle */
  uint32_t l2_promotion; /* CUtensorMapL2promotion */
  uint32_t oob_fill;     /* CUtensorMapFloatOOBfill */
} afr_tma_params;

typedef enum afr_param_kind {
  AFR_PARAM_TMA_DESCRIPTOR = 0, /* CUtensorMap, 128 bytes, 64-byte aligned, by value */
  AFR_PARAM_SCALAR = 1,
  AFR_PARAM_POINTER = 2
} afr_param_kind;

/* Where one kernel parameter lives in the packed argument buffer. */
typedef struct afr_param_slot {
  char name[64];
  afr_param_kind kind;
  uint32_t offset; /* bytes from the (64-byte aligned) start of the buffer */
  uint32_t size;
  uint32_t align;
} afr_param_slot;

/* Grid, block and shared memory of one launch. */
typedef struct afr_launch_dims {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_smem_bytes;
} afr_launch_dims;

typedef struct afr_manifest afr_manifest;
typedef struct afr_context afr_context;
typedef struct afr_kernel afr_kernel;

/* ---- errors ---- */
AFR_API const char *afr_last_error(void);
AFR_API const char *afr_status_name(afr_status status);

/* ---- manifest (host only) ---- */
AFR_API afr_status afr_manifest_load(const char *path, afr_manifest **out);
/* base_dir: where the cubin/ptx files named by the manifest are (may be NULL or ""). */
AFR_API afr_status afr_manifest_parse(const char *json, size_t length, const char *base_dir,
                                      afr_manifest **out);
AFR_API void afr_manifest_destroy(afr_manifest *manifest);
AFR_API int afr_manifest_num_kernels(const afr_manifest *manifest);
AFR_API const char *afr_manifest_kernel_name(const afr_manifest *manifest, int kernel);
AFR_API const char *afr_manifest_kernel_kind(const afr_manifest *manifest, int kernel);
AFR_API afr_status afr_manifest_find_kernel(const afr_manifest *manifest, const char *name,
                                            int *kernel);
AFR_API int afr_manifest_num_launches(const afr_manifest *manifest);
AFR_API const char *afr_manifest_launch_kernel(const afr_manifest *manifest, int launch);
/* The kernel's "config" object as JSON text (e.g. head_dim, num_heads, causal, scale). */
AFR_API const char *afr_manifest_kernel_config_json(const afr_manifest *manifest, int kernel);

/* Evaluates a manifest expression ("ceil_div(S, 32)", "2048*S", "B", "64") for the sizes. */
AFR_API afr_status afr_eval_expr(const char *expr, const afr_sizes *sizes, int64_t *value);

/* Bytes of the scratch tensor the kernel's manifest entry names under "workspace" (the
 * split-KV decode kernels), 0 when it has none. The caller allocates it and passes it as the
 * tensor of that name to this kernel and to the kernel its entry names under "then". */
AFR_API afr_status afr_kernel_workspace_bytes(const afr_manifest *manifest, int kernel,
                                              const afr_sizes *sizes, int64_t *bytes);

/* Grid (from the manifest's expressions), block and dynamic shared memory for these sizes. */
AFR_API afr_status afr_kernel_launch_dims(const afr_manifest *manifest, int kernel,
                                          const afr_sizes *sizes, afr_launch_dims *out);

/* Checks the caller's buffers against the kernel's tensors (and pointer parameters): every
 * tensor present, non-null, dtype, rank, shape for the sizes, strides (contiguous as the
 * manifest says), 16-byte aligned. */
AFR_API afr_status afr_validate(const afr_manifest *manifest, int kernel, const afr_sizes *sizes,
                                const afr_tensor *tensors, int num_tensors);

AFR_API int afr_kernel_num_tma(const afr_manifest *manifest, int kernel);
/* The cuTensorMapEncodeTiled arguments of descriptor `index` (validates first). */
AFR_API afr_status afr_tma_encode_params(const afr_manifest *manifest, int kernel, int index,
                                         const afr_sizes *sizes, const afr_tensor *tensors,
                                         int num_tensors, afr_tma_params *out);

/* The packed layout of the kernel's parameters: *count receives the number of parameters,
 * *total_bytes the buffer size; slots (may be NULL) receives up to `capacity` entries. */
AFR_API afr_status afr_kernel_param_layout(const afr_manifest *manifest, int kernel,
                                           afr_param_slot *slots, int capacity, int *count,
                                           uint32_t *total_bytes);

/* ---- driver ---- */
/* 1 when libcuda.so.1 could be loaded and has every entry point the runtime needs. */
AFR_API int afr_driver_available(void);
/* cuInit, retains the device's primary context (the one CUDA runtime / PyTorch use) and makes
 * it current on the calling thread. */
AFR_API afr_status afr_context_create(int device_ordinal, afr_context **out);
AFR_API void afr_context_destroy(afr_context *context);
/* Makes the context current on the calling thread (for use from another thread). */
AFR_API afr_status afr_context_make_current(afr_context *context);
/* Compute capability of the context's device, e.g. 90. */
AFR_API afr_status afr_context_compute_capability(afr_context *context, int *cc);

/* Loads the kernel's cubin (or, when that fails or is missing, its PTX), resolves the function
 * and raises its dynamic shared memory limit to the manifest's value. The manifest must
 * outlive the kernel. */
AFR_API afr_status afr_kernel_load(afr_context *context, const afr_manifest *manifest,
                                   int kernel, afr_kernel **out);
AFR_API void afr_kernel_destroy(afr_kernel *kernel);
/* Validates, encodes the TMA descriptors, packs the arguments and launches on `stream`
 * (a CUstream / cudaStream_t; NULL = the legacy default stream). Asynchronous. */
AFR_API afr_status afr_launch(afr_kernel *kernel, const afr_sizes *sizes,
                              const afr_tensor *tensors, int num_tensors, void *stream);

/* Small driver helpers (tests and tools). */
AFR_API afr_status afr_mem_alloc(afr_context *context, size_t bytes, uint64_t *ptr);
AFR_API afr_status afr_mem_free(afr_context *context, uint64_t ptr);
AFR_API afr_status afr_memcpy_htod(afr_context *context, uint64_t dst, const void *src,
                                   size_t bytes);
AFR_API afr_status afr_memcpy_dtoh(afr_context *context, void *dst, uint64_t src, size_t bytes);
AFR_API afr_status afr_stream_synchronize(afr_context *context, void *stream);

/* ---- device programs ----
 * A manifest holds one device program per public function of the compiled module: the kernel
 * launches of the function in order, over device buffers. Intermediates live in one arena per
 * program, laid out by liveness and grown only when a call needs more (no allocation per launch
 * or per call in steady state); the RoPE tables are computed on the host once per length and
 * kept. Outputs that are inputs updated in place (decode caches) alias those inputs; the others
 * are written to buffers the caller allocates with the shapes afr_program_infer gives. */
typedef struct afr_program afr_program;

typedef struct afr_program_output {
  afr_dtype dtype;
  int32_t rank;
  int64_t shape[AFR_MAX_RANK];
  /* -1: a fresh buffer the caller allocates and passes to afr_program_run; otherwise the
   * index of the input that this output is (updated in place). */
  int32_t aliases_input;
} afr_program_output;

typedef struct afr_program_stats {
  int64_t launches_per_call;   /* kernel launches of one call (last sizes) */
  uint64_t arena_bytes;        /* intermediates of one call (last sizes) */
  uint64_t arena_capacity;     /* bytes the arena holds now */
  uint64_t table_bytes;        /* RoPE tables kept on the device */
  int64_t device_allocations;  /* cuMemAlloc calls made by this program so far */
  int64_t calls;               /* afr_program_run calls so far */
} afr_program_stats;

AFR_API int afr_manifest_num_programs(const afr_manifest *manifest);
AFR_API const char *afr_manifest_program_function(const afr_manifest *manifest, int program);
AFR_API afr_status afr_manifest_find_program(const afr_manifest *manifest, const char *function,
                                             int *program);
AFR_API int afr_program_num_inputs(const afr_manifest *manifest, int program);
AFR_API int afr_program_num_outputs(const afr_manifest *manifest, int program);

/* Host only: checks the inputs (dtype, rank, static sizes, contiguity, sizes every kernel
 * agrees on) and gives the outputs' shapes and aliasing and the arena bytes of a call. The
 * inputs' data pointers are not read. `outputs` holds `capacity` entries (may be NULL). */
AFR_API afr_status afr_program_infer(const afr_manifest *manifest, int program,
                                     const afr_tensor *inputs, int num_inputs,
                                     afr_program_output *outputs, int capacity,
                                     uint64_t *arena_bytes);

/* Loads the program's kernels on the context. The manifest must outlive the program. */
AFR_API afr_status afr_program_create(afr_context *context, const afr_manifest *manifest,
                                      int program, afr_program **out);
AFR_API void afr_program_destroy(afr_program *program);
/* Runs the program asynchronously on `stream` (NULL: the legacy default stream). `inputs` in
 * argument order; `outputs` one entry per output (those aliasing an input are ignored and may
 * have data 0). A call on another stream than the previous one first waits for the previous
 * stream, since both use the program's arena. */
AFR_API afr_status afr_program_run(afr_program *program, const afr_tensor *inputs,
                                   int num_inputs, const afr_tensor *outputs, int num_outputs,
                                   void *stream);
AFR_API afr_status afr_program_get_stats(const afr_program *program, afr_program_stats *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNFUSE_RUNTIME_H */
