/* The cpu backend's device: what this CPU runs (probe), and at open the
 * inner products for the instruction sets left after the options' mask and
 * the thread pool every step's work is split on (created here once: steps
 * create no threads), its threads' speeds measured (cpu_balance.c). */
#include <stdio.h>
#include <string.h>

#include "cpu_backend.h"

/* The instruction sets present and not masked off. i8mm's table runs a
 * single row on sdot, so it needs dotprod; VKL_FEATURE_COOPMAT's switch
 * (matrix instructions on every backend, vkllm.h) turns it off too. The
 * VNNI tables are AVX2's with another GEMM tile, so they need AVX2. */
static uint32_t usable_isa(const vkl_backend_options *opt) {
    const uint32_t off = opt ? opt->disable_isa : 0u;
    uint32_t isa = (vkl_cpu_has_avx2() ? VKL_ISA_AVX2 : 0) | (vkl_cpu_has_dotprod() ? VKL_ISA_DOTPROD : 0) |
                   (vkl_cpu_has_i8mm() ? VKL_ISA_I8MM : 0) | (vkl_cpu_has_avx512vnni() ? VKL_ISA_AVX512VNNI : 0) |
                   (vkl_cpu_has_avxvnni() ? VKL_ISA_AVXVNNI : 0);
    /* asked only where wanted: the probe requests the tile state from Linux */
    if (!(off & (VKL_ISA_AMX | VKL_ISA_AVX2)) && vkl_cpu_has_amx()) isa |= VKL_ISA_AMX;
    isa &= ~off;
    if (!(isa & VKL_ISA_DOTPROD) || (opt && (opt->disable_features & VKL_FEATURE_COOPMAT))) isa &= ~VKL_ISA_I8MM;
    if (!(isa & VKL_ISA_AVX2) || (opt && (opt->disable_features & VKL_FEATURE_COOPMAT))) isa &= ~VKL_ISA_AMX;
    if (!(isa & VKL_ISA_AVX2)) isa &= ~(VKL_ISA_AVX512VNNI | VKL_ISA_AVXVNNI);
    return isa;
}

static const vkl_cpu_dot *dot_for(uint32_t isa) {
#ifdef VKL_CPU_HAVE_AVX2
    if (isa & VKL_ISA_AVX512VNNI) return &vkl_cpu_dot_avx512vnni;
    if (isa & VKL_ISA_AVXVNNI) return &vkl_cpu_dot_avxvnni;
    if (isa & VKL_ISA_AVX2) return &vkl_cpu_dot_avx2;
#endif
#ifdef VKL_CPU_HAVE_NEON
    if (isa & VKL_ISA_I8MM) return &vkl_cpu_dot_i8mm;
    if (isa & VKL_ISA_DOTPROD) return &vkl_cpu_dot_neon;
#endif
    (void)isa;
    return &vkl_cpu_dot_portable;
}

/* The register-only loop of the GEMM's int8 sequence: none for portable C,
 * whose sequence is the compiler's. */
static const vkl_cpu_int8_loop *int8_loop_for(uint32_t isa) {
#ifdef VKL_CPU_HAVE_AVX2
    if (isa & VKL_ISA_AMX) return &vkl_cpu_int8_loop_amx;
    if (isa & VKL_ISA_AVX512VNNI) return &vkl_cpu_int8_loop_avx512vnni;
    if (isa & VKL_ISA_AVXVNNI) return &vkl_cpu_int8_loop_avxvnni;
    if (isa & VKL_ISA_AVX2) return &vkl_cpu_int8_loop_avx2;
#endif
    (void)isa;
    return NULL;
}

static void fill_caps(uint32_t isa, unsigned threads, uint32_t disable_features, vkl_backend_caps *out) {
    memset(out, 0, sizeof(*out));
    snprintf(out->device_name, sizeof(out->device_name), "host CPU, %u threads, %s%s kernels", threads,
             dot_for(isa)->name, isa & VKL_ISA_AMX ? "+amx" : "");
    snprintf(out->driver, sizeof(out->driver), "vkllm cpu");
    /* int8 dot: W4A8 / W8A8 QuantMatMul, on every path (portable included);
     * timestamps: the host clock around each node, where opened to profile */
    out->features = (VKL_FEATURE_FP16 | VKL_FEATURE_INT8_DOT | VKL_FEATURE_TIMESTAMPS) & ~disable_features;
    out->unified_memory = true;
    out->buffer_alignment = 64;
    out->device_class = VKL_DEVICE_CPU;
}

vkl_status vkl_cpu_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out) {
    (void)ctx;
    fill_caps(usable_isa(opt), opt && opt->threads ? opt->threads : vkl_cpu_count(),
              opt ? opt->disable_features : 0u, out);
    return VKL_OK;
}

vkl_status vkl_cpu_open(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device **out) {
    *out = NULL;
    vkl_backend_device *dev = vkl_calloc(ctx, 1, sizeof(*dev));
    if (!dev) return VKL_ERR_OUT_OF_MEMORY;
    dev->ctx = ctx;
    dev->isa = usable_isa(opt);
    dev->dot = dot_for(dev->isa);
    dev->int8_loop = int8_loop_for(dev->isa);
    dev->disable_features = opt ? opt->disable_features : 0u;
    dev->profile = opt && opt->profile && !(dev->disable_features & VKL_FEATURE_TIMESTAMPS);
    vkl_pool_options po = {0};
    if (opt) po = (vkl_pool_options){opt->threads, opt->equal_shares, opt->slow_worker, opt->slow_factor};
    vkl_status st = vkl_pool_create_with(ctx, &po, &dev->pool);
    if (!st) {
        dev->worker_rate = vkl_calloc(ctx, vkl_pool_threads(dev->pool), sizeof(double));
        st = dev->worker_rate ? vkl_cpu_calibrate(dev) : VKL_ERR_OUT_OF_MEMORY;
    }
    if (st) {
        vkl_cpu_close(dev);
        return vkl_fail_prefix(ctx, st, "cpu backend");
    }
    *out = dev;
    return VKL_OK;
}

void vkl_cpu_close(vkl_backend_device *dev) {
    if (!dev) return;
    vkl_pool_destroy(dev->pool);
    vkl_free(dev->ctx, dev->worker_rate);
    vkl_free(dev->ctx, dev);
}

void vkl_cpu_caps(vkl_backend_device *dev, vkl_backend_caps *out) {
    fill_caps(dev->isa, vkl_pool_threads(dev->pool), dev->disable_features, out);
}
