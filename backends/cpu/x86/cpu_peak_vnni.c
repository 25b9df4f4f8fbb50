/* The int8 peaks of the VNNI GEMM tiles' instruction, in registers only
 * (cpu_peak.c), as cpu_peak_avx2.c does for AVX2 (assembly: a compiler
 * folds repeated products of the same registers into one): vpdpbusd into
 * 12 accumulators (latency ~5 cycles x up to 2 a cycle), 48 a round, in zmm
 * (AVX-512 VNNI, 16 lanes x 4 multiply-adds) or in ymm with the VEX
 * encoding (AVX-VNNI, 8 lanes; `%{vex%}`, as braces mark asm dialects in a
 * template). The register roles (tests/unit/test_cpu_peak.c redoes the
 * sums): weights in registers 12 and 13, activations in 14 and 15, loaded
 * from the seed at the offsets below; accumulator i takes weight i & 1 and
 * activation (i >> 1) & 1; at the end the 12 are added into one. Only the
 * assembler sees these instructions, so no -m flags; called only after
 * the probe found them. */
#include "../cpu_dot.h"

#define DP(pre, r, acc, w, a) pre "vpdpbusd %%" r #a ", %%" r #w ", %%" r #acc "\n\t"
#define ROUND12(pre, r)                                                                                         \
    DP(pre, r, 0, 12, 14) DP(pre, r, 1, 13, 14) DP(pre, r, 2, 12, 15) DP(pre, r, 3, 13, 15)                    \
    DP(pre, r, 4, 12, 14) DP(pre, r, 5, 13, 14) DP(pre, r, 6, 12, 15) DP(pre, r, 7, 13, 15)                    \
    DP(pre, r, 8, 12, 14) DP(pre, r, 9, 13, 14) DP(pre, r, 10, 12, 15) DP(pre, r, 11, 13, 15)
#define ZERO(x, r, n) x " %%" r #n ", %%" r #n ", %%" r #n "\n\t"
#define ZERO12(x, r)                                                                                            \
    ZERO(x, r, 0) ZERO(x, r, 1) ZERO(x, r, 2) ZERO(x, r, 3) ZERO(x, r, 4) ZERO(x, r, 5) ZERO(x, r, 6)         \
    ZERO(x, r, 7) ZERO(x, r, 8) ZERO(x, r, 9) ZERO(x, r, 10) ZERO(x, r, 11)
#define ADD(r, n) "vpaddd %%" r #n ", %%" r "0, %%" r "0\n\t"
#define ADD11(r)                                                                                                \
    ADD(r, 1) ADD(r, 2) ADD(r, 3) ADD(r, 4) ADD(r, 5) ADD(r, 6) ADD(r, 7) ADD(r, 8) ADD(r, 9) ADD(r, 10)      \
    ADD(r, 11)
/* mov: the unaligned load / store; at: the seed offsets of registers 12..15 */
#define LOOP(pre, r, mov, xor, at12, at13, at14, at15)                                                         \
    __asm__ volatile(mov " " #at12 "(%[s]), %%" r "12\n\t" mov " " #at13 "(%[s]), %%" r "13\n\t"              \
                     mov " " #at14 "(%[s]), %%" r "14\n\t" mov " " #at15 "(%[s]), %%" r "15\n\t"              \
                     ZERO12(xor, r) "1:\n\t" ROUND12(pre, r) ROUND12(pre, r) ROUND12(pre, r) ROUND12(pre, r)  \
                     "dec %[n]\n\tjnz 1b\n\t" ADD11(r) mov " %%" r "0, (%[o])\n\tvzeroupper\n\t"              \
                     : [n] "+r"(rounds)                                                                        \
                     : [s] "r"(seed), [o] "r"(out)                                                             \
                     : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",   \
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15")

/* zmm: weights seed[0..63], seed[64..127]; activations seed[64..127], seed[0..63] */
static uint32_t zmm_loop(uint64_t rounds, const int8_t seed[128]) {
    uint32_t out[16];
    if (!rounds) return 0;
    LOOP("", "zmm", "vmovdqu64", "vpxord", 0, 64, 64, 0);
    return out[0] ^ out[15];
}

/* ymm: weights seed[0..31], seed[32..63]; activations seed[64..95], seed[96..127] */
static uint32_t ymm_loop(uint64_t rounds, const int8_t seed[128]) {
    uint32_t out[8];
    if (!rounds) return 0;
    LOOP("%{vex%} ", "ymm", "vmovdqu", "vpxor", 0, 32, 64, 96);
    return out[0] ^ out[7];
}

const vkl_cpu_int8_loop vkl_cpu_int8_loop_avx512vnni = {"vpdpbusd zmm, 12 accumulators", 48 * 16 * 4 * 2, zmm_loop};
const vkl_cpu_int8_loop vkl_cpu_int8_loop_avxvnni = {"vpdpbusd ymm (VEX), 12 accumulators", 48 * 8 * 4 * 2, ymm_loop};
