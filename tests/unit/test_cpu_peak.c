/* The cpu backend's int8 peak (backends/cpu/cpu_peak.c): the AVX2 loop does
 * the work it declares, checked by redoing its sums here in C (vpmaddubsw
 * with its int16 saturation, vpaddw wrapping, vpmaddwd by ones, vpaddd), and
 * the vtable's int8_peak gives a positive rate on AVX2 and a clear error on
 * portable C, which has no loop; the same for the VNNI loops (vpdpbusd's)
 * and the AMX loop (tdpbssd's sums redone in C), the default where the CPU
 * has AMX. Without AVX2 (AMX) here,
 * that half is skipped. */
#include <math.h>
#include <string.h>

#include "../../backends/cpu/cpu_dot.h"
#include "backend.h"
#include "check.h"

#ifdef VKL_CPU_HAVE_AVX2
/* The loop's result, element by element: each of 8 accumulators adds 8
 * products of (w0 or w1) x (a0 or a1) a round, then widens into the int32
 * sums; returns lane 0 ^ lane 7 as the loop does. */
static uint32_t want_loop(uint64_t rounds, const int8_t seed[128]) {
    uint32_t s[8] = {0};
    for (uint64_t round = 0; round < rounds; round++)
        for (int acc = 0; acc < 8; acc++) {
            const uint8_t *w = (const uint8_t *)seed + 32 * (acc & 1);
            const int8_t *a = seed + 64 + 32 * ((acc >> 1) & 1);
            int16_t p[16] = {0};
            for (int step = 0; step < 8; step++)
                for (int j = 0; j < 16; j++) {
                    int32_t v = w[2 * j] * a[2 * j] + w[2 * j + 1] * a[2 * j + 1];
                    v = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
                    p[j] = (int16_t)(uint16_t)((uint32_t)(uint16_t)p[j] + (uint32_t)(uint16_t)(int16_t)v);
                }
            for (int l = 0; l < 8; l++) s[l] += (uint32_t)((int32_t)p[2 * l] + (int32_t)p[2 * l + 1]);
        }
    return s[0] ^ s[7];
}

/* The VNNI loops' result (x86/cpu_peak_vnni.c):
 * 12 accumulators of `lanes` int32 each add, 4 times a round, the 4
 * products of unsigned weight bytes by signed activation bytes per lane
 * (vpdpbusd: no saturation, int32 wraps); accumulator i takes weight i & 1
 * and activation (i >> 1) & 1, the seed's bytes at w_at / a_at; the 12 are
 * summed; lane 0 ^ lane `lanes` - 1. */
static uint32_t want_vnni(uint64_t rounds, const int8_t seed[128], int lanes, const int w_at[2], const int a_at[2]) {
    uint32_t s[16] = {0};
    for (int acc = 0; acc < 12; acc++) {
        const uint8_t *w = (const uint8_t *)seed + w_at[acc & 1];
        const int8_t *a = seed + a_at[(acc >> 1) & 1];
        for (int l = 0; l < lanes; l++) {
            int32_t dot = 0;
            for (int j = 0; j < 4; j++) dot += w[4 * l + j] * a[4 * l + j];
            s[l] += (uint32_t)dot * (uint32_t)(4 * rounds);
        }
    }
    return s[0] ^ s[lanes - 1];
}

/* The device's int8 peak where `loop` is the one chosen (`off`: the
 * instruction sets turned off so that it is): positive, naming that loop. */
static void test_peak(vkl_context *ctx, const vkl_backend_vtable *cpu, const vkl_cpu_int8_loop *loop, const char *name,
                      uint32_t off) {
    const vkl_backend_options two = {.threads = 2, .disable_isa = off};
    vkl_backend_device *dev;
    double rate = -1;
    const char *sequence = NULL;
    CHECK_OK(ctx, cpu->open(ctx, &two, &dev));
    CHECK_OK(ctx, cpu->int8_peak(dev, ctx, &rate, &sequence));
    CHECK(rate > 0 && isfinite(rate) && sequence == loop->sequence);
    printf("%s: loop sums exact; int8 peak %.1f GOP/s on 2 threads (%s)\n", name, rate / 1e9, sequence ? sequence : "");
    cpu->close(dev);
}

/* One VNNI loop: its sums redone, and the device's peak where it is the
 * loop chosen. */
static void test_vnni(vkl_context *ctx, const vkl_backend_vtable *cpu, const vkl_cpu_int8_loop *loop, const char *name,
                      int lanes, const int w_at[2], const int a_at[2], uint32_t off) {
    int8_t seed[128];
    for (int i = 0; i < 128; i++) seed[i] = (int8_t)(i * 29 + 3);
    seed[0] = (int8_t)0xFF; /* 255 x -128: the widest product */
    seed[a_at[0]] = -128;
    for (uint64_t rounds = 1; rounds <= 5; rounds += 2)
        CHECKF(loop->run(rounds, seed) == want_vnni(rounds, seed, lanes, w_at, a_at), "%s loop, %llu rounds", name,
               (unsigned long long)rounds);
    test_peak(ctx, cpu, loop, name, off);
}

/* The AMX loop's result: each round adds A x B into C tile 0 (A, B: the
 * seed repeated over a 16 x 64 tile, signed bytes (tdpbssd), B's
 * row k / 4 holding codes k of its 16 columns in fours); lane 0 (row 0,
 * column 0) ^ lane 255 (row 15, column 15). */
static uint32_t want_amx(uint64_t rounds, const int8_t seed[128]) {
    uint32_t first = 0, last = 0;
    for (int k = 0; k < 64; k++) {
        first += (uint32_t)(seed[k % 128] * seed[(k / 4 * 64 + k % 4) % 128]);
        last += (uint32_t)(seed[(15 * 64 + k) % 128] * seed[(k / 4 * 64 + 60 + k % 4) % 128]);
    }
    return (uint32_t)(first * rounds) ^ (uint32_t)(last * rounds);
}
#endif

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    const vkl_backend_vtable *cpu = vkl_backend_find("cpu");
    CHECK(cpu && cpu->int8_peak);
    vkl_backend_device *dev;
    double rate = -1;
    const char *sequence = "unset";
    const vkl_backend_options portable = {.threads = 2, .disable_isa = ~0u};
    CHECK_OK(ctx, cpu->open(ctx, &portable, &dev));
    CHECK_ERR(ctx, cpu->int8_peak(dev, ctx, &rate, &sequence), VKL_ERR_UNSUPPORTED, "no int8 peak loop");
    CHECK(rate == 0 && sequence == NULL);
    cpu->close(dev);
#ifdef VKL_CPU_HAVE_AVX2
    if (vkl_cpu_has_avx2()) {
        int8_t seed[128];
        for (int i = 0; i < 128; i++) seed[i] = (int8_t)(i * 37 + 11);
        seed[0] = seed[1] = (int8_t)0xFF; /* 255 x 127 twice: the int16 saturation */
        seed[64] = seed[65] = 127;
        for (uint64_t rounds = 1; rounds <= 5; rounds += 2)
            CHECKF(vkl_cpu_int8_loop_avx2.run(rounds, seed) == want_loop(rounds, seed), "avx2 loop, %llu rounds",
                   (unsigned long long)rounds);
        test_peak(ctx, cpu, &vkl_cpu_int8_loop_avx2, "avx2", VKL_ISA_AMX | VKL_ISA_AVX512VNNI | VKL_ISA_AVXVNNI);
    } else {
        printf("avx2: not on this CPU, skipped\n");
    }
    static const int zmm_w[2] = {0, 64}, zmm_a[2] = {64, 0}, ymm_w[2] = {0, 32}, ymm_a[2] = {64, 96};
    if (vkl_cpu_has_avx512vnni())
        test_vnni(ctx, cpu, &vkl_cpu_int8_loop_avx512vnni, "avx512vnni", 16, zmm_w, zmm_a, VKL_ISA_AMX);
    else
        printf("avx512vnni: not on this CPU (or the OS does not save zmm), skipped\n");
    if (vkl_cpu_has_avxvnni())
        test_vnni(ctx, cpu, &vkl_cpu_int8_loop_avxvnni, "avxvnni", 8, ymm_w, ymm_a, VKL_ISA_AMX | VKL_ISA_AVX512VNNI);
    else
        printf("avxvnni: not on this CPU, skipped\n");
    if (vkl_cpu_has_amx()) {
        int8_t seed[128];
        for (int i = 0; i < 128; i++) seed[i] = (int8_t)(i * 53 + 7);
        for (uint64_t rounds = 1; rounds <= 5; rounds += 2)
            CHECKF(vkl_cpu_int8_loop_amx.run(rounds, seed) == want_amx(rounds, seed), "amx loop, %llu rounds",
                   (unsigned long long)rounds);
        test_peak(ctx, cpu, &vkl_cpu_int8_loop_amx, "amx", 0); /* the default */
    } else {
        printf("amx: not on this CPU (or the OS refused its tile state), skipped\n");
    }
#endif
    vkl_context_destroy(ctx);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
