/* Strict command-line values and error lines (cli.h). strtoul and friends
 * are not used for integers: they skip blanks, accept a '-' on unsigned
 * values and saturate, which is how `-n -1` once became SIZE_MAX. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool vkl_cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

const char *vkl_cli_value(const char *prog, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        vkl_cli_usage_error(prog, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int vkl_cli_usage_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry '%s --help'\n", prog);
    return VKL_EXIT_USAGE;
}

int vkl_cli_fail(const char *prog, const vkl_context *ctx, vkl_status st) {
    const char *msg = ctx ? vkl_context_error(ctx) : "";
    fprintf(stderr, "%s: %s\n", prog, *msg ? msg : vkl_status_name(st ? st : VKL_ERR_INTERNAL));
    return VKL_EXIT_FAILURE;
}

typedef enum { NUM_OK, NUM_SYNTAX, NUM_RANGE } num_result;

/* An optional '-' and one or more decimal digits, nothing else; the
 * magnitude must fit 64 bits. */
static num_result parse_whole(const char *s, bool *neg, uint64_t *mag) {
    *neg = *s == '-';
    if (*neg) s++;
    if (!*s) return NUM_SYNTAX;
    uint64_t v = 0;
    bool overflow = false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return NUM_SYNTAX;
        overflow |= __builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v);
    }
    *mag = v;
    return overflow ? NUM_RANGE : NUM_OK;
}

static int bad_value(const char *prog, const char *opt, const char *text, const char *why, const char *range) {
    fprintf(stderr, "%s: %s '%s' %s; expected %s\n", prog, opt, text, why, range);
    return VKL_EXIT_USAGE;
}

int vkl_cli_u64(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    char range[64];
    snprintf(range, sizeof(range), "%llu to %llu", (unsigned long long)min, (unsigned long long)max);
    bool neg;
    uint64_t v = 0;
    num_result r = parse_whole(text, &neg, &v);
    if (r == NUM_SYNTAX) return bad_value(prog, opt, text, "is not a whole number", range);
    if (neg && v) r = NUM_RANGE;
    if (r == NUM_RANGE || v < min || v > max) return bad_value(prog, opt, text, "is out of range", range);
    *out = v;
    return 0;
}

int vkl_cli_size(const char *prog, const char *opt, const char *text, size_t min, size_t max, size_t *out) {
    uint64_t v;
    int rc = vkl_cli_u64(prog, opt, text, min, max, &v);
    if (!rc) *out = (size_t)v;
    return rc;
}

int vkl_cli_i64(const char *prog, const char *opt, const char *text, int64_t min, int64_t max, int64_t *out) {
    char range[64];
    snprintf(range, sizeof(range), "%lld to %lld", (long long)min, (long long)max);
    bool neg;
    uint64_t mag = 0;
    num_result r = parse_whole(text, &neg, &mag);
    if (r == NUM_SYNTAX) return bad_value(prog, opt, text, "is not a whole number", range);
    int64_t v = 0;
    if (r == NUM_OK && !neg && mag <= (uint64_t)INT64_MAX) v = (int64_t)mag;
    else if (r == NUM_OK && neg && mag <= (uint64_t)INT64_MAX) v = -(int64_t)mag;
    else if (r == NUM_OK && neg && mag == (uint64_t)INT64_MAX + 1u) v = INT64_MIN;
    else r = NUM_RANGE;
    if (r == NUM_RANGE || v < min || v > max) return bad_value(prog, opt, text, "is out of range", range);
    *out = v;
    return 0;
}

int vkl_cli_i32(const char *prog, const char *opt, const char *text, int32_t min, int32_t max, int32_t *out) {
    int64_t v;
    int rc = vkl_cli_i64(prog, opt, text, min, max, &v);
    if (!rc) *out = (int32_t)v;
    return rc;
}

static void float_range(double min, double max, bool min_open, char *buf, size_t cap) {
    if (min_open) snprintf(buf, cap, "a number > %g and <= %g", min, max);
    else snprintf(buf, cap, "a number from %g to %g", min, max);
}

int vkl_cli_f64(const char *prog, const char *opt, const char *text, double min, double max, bool min_open,
                double *out) {
    char range[96];
    float_range(min, max, min_open, range, sizeof(range));
    /* strtod skips leading blanks; a value is the whole argument or nothing */
    if (!*text || isspace((unsigned char)*text)) return bad_value(prog, opt, text, "is not a number", range);
    char *end;
    double v = strtod(text, &end);
    if (*end) return bad_value(prog, opt, text, "is not a number", range);
    if (!isfinite(v)) return bad_value(prog, opt, text, "is not a finite number", range);
    if (v > max || v < min || (min_open && v == min)) return bad_value(prog, opt, text, "is out of range", range);
    *out = v;
    return 0;
}

int vkl_cli_f32(const char *prog, const char *opt, const char *text, float min, float max, bool min_open,
                float *out) {
    double v;
    int rc = vkl_cli_f64(prog, opt, text, min, max, min_open, &v);
    if (rc) return rc;
    /* 1e-60 is > 0 as a double and 0 as a float */
    if (min_open && !((float)v > min)) {
        char range[96];
        float_range(min, max, min_open, range, sizeof(range));
        return bad_value(prog, opt, text, "is out of range", range);
    }
    *out = (float)v;
    return 0;
}
