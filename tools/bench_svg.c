/* vkbench --svg FILE (bench_report.h): a one-page roofline drawn by hand.
 * Log-log axes, arithmetic intensity (FLOP per byte moved) against GFLOP/s;
 * the measured copy bandwidth is the sloped line every memory-bound op sits
 * under; one point per op type and phase (decode: circles, prefill:
 * squares), labelled when it takes a visible share of the time. Where the
 * backend measured a compute peak (bench_model.c: int8 on cpu, the fastest
 * of f32 FMA / fp16 FMA / matrix units on a GPU), the roof turns flat at it
 * (the ridge at peak / bandwidth FLOP per byte); else the page says none was
 * measured. Op types with no bytes, no FLOPs or no time (views) cannot sit on
 * log axes and are left out. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_report.h"
#include "bench_util.h"

#define W 960
#define H 640
#define LEFT 90
#define RIGHT 40
#define TOP 70
#define BOTTOM 80
#define LABEL_SHARE 1.0 /* % of the phase's op time: smaller ops stay unlabelled dots, or labels pile up */

typedef struct axes {
    double x0, x1, y0, y1; /* decades: log10 of the ends */
} axes;

static double px(const axes *a, double x) { return LEFT + (log10(x) - a->x0) / (a->x1 - a->x0) * (W - LEFT - RIGHT); }
static double py(const axes *a, double y) { return H - BOTTOM - (log10(y) - a->y0) / (a->y1 - a->y0) * (H - TOP - BOTTOM); }

/* Text with &, <, > and quotes escaped. */
static void text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static bool plotted(const vkl_bench_op_sum *o) { return o->ms > 0 && o->bytes > 0 && o->flops > 0; }

/* Extends [lo, hi] (log10) by the profile's points. */
static void extent(const vkl_bench_profile *p, double *xlo, double *xhi, double *ylo, double *yhi) {
    for (int op = 0; op < VKL_OP_COUNT_; op++) {
        const vkl_bench_op_sum *o = &p->ops[op];
        if (!plotted(o)) continue;
        const double x = log10(o->flops / o->bytes), y = log10(o->flops / o->ms * 1e-6);
        *xlo = fmin(*xlo, x);
        *xhi = fmax(*xhi, x);
        *ylo = fmin(*ylo, y);
        *yhi = fmax(*yhi, y);
    }
}

static void grid(FILE *f, const axes *a) {
    fprintf(f, "<g stroke=\"#ddd\" stroke-width=\"1\">\n");
    for (double d = a->x0; d <= a->x1; d++)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", px(a, pow(10, d)), TOP, px(a, pow(10, d)),
                H - BOTTOM);
    for (double d = a->y0; d <= a->y1; d++)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT, py(a, pow(10, d)), W - RIGHT,
                py(a, pow(10, d)));
    fprintf(f, "</g>\n<g font-size=\"12\" fill=\"#333\">\n");
    for (double d = a->x0; d <= a->x1; d++)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", px(a, pow(10, d)), H - BOTTOM + 18,
                pow(10, d));
    for (double d = a->y0; d <= a->y1; d++)
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT - 6, py(a, pow(10, d)) + 4,
                pow(10, d));
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\">arithmetic intensity (FLOP per byte "
            "moved)</text>\n"
            "<text transform=\"translate(24 %d) rotate(-90)\" text-anchor=\"middle\" font-size=\"14\">GFLOP/s</text>\n"
            "</g>\n",
            (LEFT + W - RIGHT) / 2, H - BOTTOM + 44, (TOP + H - BOTTOM) / 2);
}

/* The copy-bandwidth roof: GFLOP/s = intensity x GB/s, across the plot. */
/* min(intensity x bandwidth, peak): the sloped bandwidth line, flat from
 * the ridge on where a peak (GFLOP/s, 0: none) was measured. */
static void roof(FILE *f, const axes *a, double copy_bw, double peak) {
    if (copy_bw <= 0) return;
    const double gbs = copy_bw / 1e9, xa = pow(10, a->x0), xb = pow(10, a->x1);
    const double ridge = peak > 0 ? fmin(fmax(peak / gbs, xa), xb) : xb;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-width=\"2\" "
            "clip-path=\"url(#plot)\"/>\n",
            px(a, xa), py(a, xa * gbs), px(a, ridge), py(a, ridge * gbs));
    if (peak > 0 && ridge < xb)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-width=\"2\" "
                "clip-path=\"url(#plot)\"/>\n",
                px(a, ridge), py(a, peak), px(a, xb), py(a, peak));
}

static void points(FILE *f, const axes *a, const vkl_bench_profile *p, bool square, const char *colour) {
    for (int op = 0; op < VKL_OP_COUNT_; op++) {
        const vkl_bench_op_sum *o = &p->ops[op];
        if (!plotted(o)) continue;
        const double x = px(a, o->flops / o->bytes), y = py(a, o->flops / o->ms * 1e-6);
        if (square)
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"/>\n", x - 4, y - 4, colour);
        else
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/>\n", x, y, colour);
        const double share = p->op_ms > 0 ? 100.0 * o->ms / p->op_ms : 0;
        if (share < LABEL_SHARE) continue;
        const bool left = x > W - RIGHT - 200; /* near the right edge: the label goes left of the point */
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\" text-anchor=\"%s\">",
                left ? x - 7 : x + 7, y - 5, colour, left ? "end" : "start");
        text(f, vkl_op_info_get((vkl_op)op)->name);
        fprintf(f, " (%s, %.1f%%)</text>\n", p->phase, share);
    }
}

static void page(FILE *f, const vkl_bench_report *r) {
    const vkl_bench_profile *pre = &r->prefill_profile, *dec = &r->decode_profile;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    extent(pre, &xlo, &xhi, &ylo, &yhi);
    extent(dec, &xlo, &xhi, &ylo, &yhi);
    if (!(xlo <= xhi)) xlo = -1, xhi = 2, ylo = -1, yhi = 2; /* nothing plotted: a plain frame */
    axes a = {floor(xlo), ceil(xhi), floor(ylo), ceil(yhi)};
    const double peak = r->compute_peak / 1e9; /* GFLOP/s; 0: not measured */
    if (r->copy_bw > 0) { /* the roof's top */
        const double top = pow(10, a.x1) * r->copy_bw / 1e9;
        a.y1 = fmax(a.y1, ceil(log10(peak > 0 ? fmin(top, peak) * 1.01 : top)));
    }
    if (a.y1 - a.y0 > 8) a.y0 = a.y1 - 8; /* a roof far above the points keeps them legible */
    if (a.x1 <= a.x0) a.x1 = a.x0 + 1;
    if (a.y1 <= a.y0) a.y1 = a.y0 + 1;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\">\n"
            "<defs><clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></clipPath></defs>\n"
            "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
            "<text x=\"%d\" y=\"28\" font-size=\"16\">vkbench roofline: ",
            W, H, W, H, LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM, W, H, LEFT);
    text(f, r->model);
    fprintf(f, " on ");
    text(f, r->backend);
    fprintf(f, " (");
    text(f, r->device);
    fprintf(f,
            ")</text>\n<text x=\"%d\" y=\"50\" font-size=\"12\" fill=\"#c00\">red line: copy bandwidth %.2f GB/s "
            "(measured on the %s); ",
            LEFT, r->copy_bw / 1e9, r->device_bw ? "device" : "host");
    if (peak > 0) {
        fprintf(f, "flat: compute peak %.1f GFLOP/s (", peak);
        text(f, r->compute_peak_kind);
        fprintf(f, ")</text>\n");
    } else {
        fprintf(f, "compute peak: not measured, no ceiling drawn</text>\n");
    }
    grid(f, &a);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", LEFT, TOP,
            W - LEFT - RIGHT, H - TOP - BOTTOM);
    roof(f, &a, r->copy_bw, peak);
    points(f, &a, pre, true, "#d60");
    points(f, &a, dec, false, "#06c");
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#333\">circles: a decode step, squares: a prefill; "
            "labels: ops with at least %g%% of the phase's op time</text>\n</svg>\n",
            LEFT, H - 16, LABEL_SHARE);
}

vkl_status vkl_bench_svg_write(vkl_context *ctx, const char *path, const vkl_bench_report *r) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "--svg: out of host memory");
    page(f, r);
    bool failed = ferror(f) != 0;
    failed |= fclose(f) != 0; /* sets buf and n */
    vkl_status st = failed || !buf ? vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "--svg: out of host memory")
                                   : vkl_bench_write_file(ctx, path, buf, n);
    free(buf);
    return st;
}
