/* Codec decoder benchmark (not a ctest): one-shot vs streaming ms per frame, per-frame cost
 * at stream frame ~10 vs a late frame, streaming-vs-one-shot NMSE, and windowed-decode SNR
 * vs the exact decode for context 24/48/72. Single thread.
 * Build: gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Isrc -Iinclude bench/bench_codec.c \
 *        build-codec/libcodectalk.a $(pkg-config --libs jansson libpcre2-8 libutf8proc) -lpthread -lm
 * Run:   ./a.out <model_dir> [oneshot_frames=30] [stream_frames=520] [window_total=100] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double nmse(const float *g, const float *r, size_t n) {
    double a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)g[i] - r[i];
        a += d * d;
        b += (double)r[i] * r[i];
    }
    return a / (b > 1e-30 ? b : 1e-30);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <model_dir> [oneshot_frames] [stream_frames] [window_total]\n", argv[0]);
        return 2;
    }
    int n1 = argc > 2 ? atoi(argv[2]) : 30, n2 = argc > 3 ? atoi(argv[3]) : 520, nw = argc > 4 ? atoi(argv[4]) : 100;
    char err[512];
    ct_codec *c = NULL;
    double t0 = now_s();
    if (ct_codec_load(argv[1], &c, err, sizeof err) != CT_OK) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    printf("load: %.2f s\n", now_s() - t0);
    const int G = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c);
    int nmax = n1 > n2 ? n1 : n2;
    if (nw > nmax) nmax = nw;
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)nmax * G);
    uint32_t st = 12345;
    for (int i = 0; i < nmax * G; i++) {
        st = st * 1664525u + 1013904223u;
        codes[i] = (int32_t)((st >> 8) % 2048);
    }
    float *ref = malloc(sizeof(float) * (size_t)nmax * spf), *out = malloc(sizeof(float) * (size_t)nmax * spf);

    t0 = now_s();
    if (ct_codec_decode(c, codes, n1, ref, err, sizeof err) != CT_OK) return 1;
    double dt = now_s() - t0;
    printf("one-shot: %d frames in %.2f s = %.1f ms/frame (RTF %.2f)\n", n1, dt, dt * 1e3 / n1, dt / (n1 * 0.08));

    ct_codec_stream *s = NULL;
    if (ct_codec_stream_create(c, 25, &s, err, sizeof err) != CT_OK) return 1;
    double *ft = malloc(sizeof(double) * (size_t)n2);
    t0 = now_s();
    for (int f = 0; f < n2; f++) {
        double a = now_s();
        ct_codec_stream_push(s, codes + (size_t)f * G, 1, out + (size_t)f * spf, err, sizeof err);
        ft[f] = now_s() - a;
    }
    dt = now_s() - t0;
    printf("stream 1-frame pushes: %d frames in %.2f s = %.1f ms/frame\n", n2, dt, dt * 1e3 / n2);
    int late = n2 >= 510 ? 500 : n2 - 10;
    double e0 = 0, e1 = 0;
    for (int i = 0; i < 10; i++) {
        e0 += ft[10 + i];
        e1 += ft[late + i];
    }
    printf("stream ms/frame at frames 10-19: %.2f, at frames %d-%d: %.2f\n", e0 * 100, late, late + 9, e1 * 100);
    int nc = n1 < n2 ? n1 : n2;
    printf("stream vs one-shot over %d frames: nmse %g\n", nc, nmse(out, ref, (size_t)nc * spf));
    /* ramp pushes */
    ct_codec_stream_reset(s);
    static const int ramp[5] = {2, 4, 8, 16, 25};
    t0 = now_s();
    int f = 0, k = 0;
    while (f < nc) {
        int m = ramp[k++ % 5];
        if (m > nc - f) m = nc - f;
        ct_codec_stream_push(s, codes + (size_t)f * G, m, out + (size_t)f * spf, err, sizeof err);
        f += m;
    }
    dt = now_s() - t0;
    printf("stream ramp 2,4,8,16,25: %.1f ms/frame, nmse vs one-shot %g\n", dt * 1e3 / nc,
           nmse(out, ref, (size_t)nc * spf));
    ct_codec_stream_free(s);

    /* windowed decode: one 25-frame chunk at the end of nw frames, contexts 24/48/72 */
    if (nw >= 100) {
        if (ct_codec_decode(c, codes, nw, ref, err, sizeof err) != CT_OK) return 1;
        int chunk = 25, at = nw - chunk;
        static const int ctxs[3] = {24, 48, 72};
        for (int i = 0; i < 3; i++) {
            int ctx = ctxs[i] < at ? ctxs[i] : at;
            t0 = now_s();
            if (ct_codec_decode_window(c, codes + (size_t)(at - ctx) * G, ctx, codes + (size_t)at * G, chunk, out, err,
                                       sizeof err) != CT_OK)
                return 1;
            dt = now_s() - t0;
            double e = nmse(out, ref + (size_t)at * spf, (size_t)chunk * spf);
            printf("window chunk %d at frame %d, context %d: SNR %.1f dB vs exact (%.0f ms/new frame)\n", chunk, at, ctx,
                   e > 0 ? -10 * log10(e) : 999.0, dt * 1e3 / chunk);
        }
    }
    free(ft);
    free(codes);
    free(ref);
    free(out);
    ct_codec_free(c);
    return 0;
}
