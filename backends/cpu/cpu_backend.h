/* The cpu backend's own state, shared by its files: the open device (thread
 * pool and its threads' speeds, chosen inner products) and the weights it repacked at load. Ops
 * without a kernel here run ref's (backends/ref/host_exec.h). */
#ifndef VKL_CPU_BACKEND_H
#define VKL_CPU_BACKEND_H

#include "../../engine/backend.h"
#include "../../engine/pool.h"
#include "../../engine/quant/quant.h"
#include "../ref/ref_kernels.h"
#include "cpu_dot.h"

struct vkl_backend_device {
    vkl_context *ctx; /* open()'s: the weights' */
    vkl_pool *pool;   /* made once at open; every step's work is split on it */
    const vkl_cpu_dot *dot;
    const vkl_cpu_int8_loop *int8_loop; /* the GEMM's sequence for cpu_peak.c; NULL where none */
    uint32_t isa;     /* VKL_ISA_* in use */
    uint32_t disable_features;
    bool profile;     /* executables time each node (vkl_backend_options.profile) */
    double *worker_rate; /* per pool thread: its int8 ops a second at open (cpu_balance.c) */
};

/* cpu_device.c: the vtable's device functions. */
vkl_status vkl_cpu_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out);
vkl_status vkl_cpu_open(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device **out);
void vkl_cpu_close(vkl_backend_device *dev);
void vkl_cpu_caps(vkl_backend_device *dev, vkl_backend_caps *out);
/* cpu_balance.c: each thread's speed measured at open, which sizes its
 * shares of the matrix products; the vtable's worker_speeds. */
vkl_status vkl_cpu_calibrate(vkl_backend_device *dev);
void vkl_cpu_worker_speeds(vkl_backend_device *dev, double *ops_per_second, double *share, size_t cap,
                           size_t *count);
/* cpu_peak.c: the vtable's int8_peak. */
vkl_status vkl_cpu_int8_peak(vkl_backend_device *dev, vkl_context *ctx, double *ops_per_second,
                             const char **sequence);

/* One weight in the kernels' layout, made once at load. */
typedef struct vkl_cpu_weight {
    int64_t N, K;
    /* Quantized (dtype Q_*): engine/quant's CPU layout in 4-row tiles
     * (cpu_dot.h); float: the [N, K] rows (a MatMul's [K, N] B transposed,
     * or a QuantMatMul's float W as it is, not copied). */
    vkl_dtype dtype;
    vkl_quant_cpu_layout lay;
    const uint8_t *data;
    void *owned; /* what data points into, when this backend made it */
} vkl_cpu_weight;

struct vkl_backend_weights {
    vkl_backend_device *dev;
    const vkl_graph *g;
    vkl_cpu_weight **by_tensor; /* per graph tensor: its repacked form, or NULL */
    vkl_cpu_weight *list;
    size_t n;
};

vkl_status vkl_cpu_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out);
void vkl_cpu_weights_release(vkl_backend_device *dev, vkl_backend_weights *w);

/* Kernels (vkl_ref_args.backend is the weights). Each falls back to ref's
 * kernel for what it does not cover (another dtype, a weight not repacked). */
vkl_status vkl_cpu_quant_mat_mul(const vkl_ref_args *a);
vkl_status vkl_cpu_mat_mul(const vkl_ref_args *a);
vkl_status vkl_cpu_attention(const vkl_ref_args *a);
/* The scratch vkl_cpu_attention takes for these operands (host_exec.h's
 * vkl_host_scratch_fn): a prompt's packed KV heads and each thread's block. */
size_t vkl_cpu_attention_scratch(const vkl_ref_args *a);
vkl_status vkl_cpu_rms_norm(const vkl_ref_args *a);
/* cpu_split.c: ref's kernels for these ops, on slices spread over the pool */
vkl_status vkl_cpu_add(const vkl_ref_args *a);
vkl_status vkl_cpu_sub(const vkl_ref_args *a);
vkl_status vkl_cpu_mul(const vkl_ref_args *a);
vkl_status vkl_cpu_div(const vkl_ref_args *a);
vkl_status vkl_cpu_silu_mul(const vkl_ref_args *a);
vkl_status vkl_cpu_rope(const vkl_ref_args *a);

/* Y[m, n] = bias[n] + sum_k X[m, k] * W(n, k) for a repacked W, split over
 * the pool by output rows. X: M rows of K f32; Y: M rows of N f32. */
vkl_status vkl_cpu_gemm(const vkl_ref_args *a, const vkl_cpu_weight *w, const float *X, int64_t M, const float *bias,
                        float *Y);
/* x86/cpu_gemm_amx.c: prefill's GEMM on AMX tiles (VKL_ISA_AMX) for a 4-bit
 * W whose group is whole 64-code tile steps (up to 4096), at least
 * VKL_CPU_AMX_MIN_ROWS rows of X, which vkl_cpu_gemm has quantized (xq: M
 * rows of Kq codes; xd: per row and group the scale); the bits of the other
 * kernels. scratch: vkl_cpu_amx_scratch bytes, 64-byte aligned. */
#define VKL_CPU_AMX_MIN_ROWS 32
#ifdef VKL_CPU_HAVE_AVX2
bool vkl_cpu_amx_takes(const vkl_cpu_weight *w, int64_t M);
size_t vkl_cpu_amx_scratch(const vkl_cpu_weight *w, int64_t M, unsigned threads);
void vkl_cpu_gemm_amx(vkl_pool *pool, const vkl_cpu_weight *w, int64_t M, const int8_t *xq, const float *xd,
                      const float *bias, float *Y, void *scratch);
#else /* not x86: never taken, so cpu_gemm.c needs no #ifdef */
static inline bool vkl_cpu_amx_takes(const vkl_cpu_weight *w, int64_t M) { return (void)w, (void)M, false; }
static inline size_t vkl_cpu_amx_scratch(const vkl_cpu_weight *w, int64_t M, unsigned threads) {
    return (void)w, (void)M, (void)threads, 0;
}
static inline void vkl_cpu_gemm_amx(vkl_pool *pool, const vkl_cpu_weight *w, int64_t M, const int8_t *xq,
                                    const float *xd, const float *bias, float *Y, void *scratch) {
    (void)pool, (void)w, (void)M, (void)xq, (void)xd, (void)bias, (void)Y, (void)scratch;
}
#endif

#endif
