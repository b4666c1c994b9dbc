/* The speaker encoder at full size: make-model's 0.6b-base (the class-default ECAPA-TDNN, 512 /
   1536 channels, enc_dim 1024) loads and embeds a 10 s clip through ct_model_speaker_embed;
   the x-vector is finite, non-zero and the same bits on every call. Prints the embed time
   (best of 3; docs/CLONING.md "Speaker encoder" quotes it). Heavy: writes the 0.6b-base
   preset (~2.6 GB) into the build directory and deletes it afterwards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codectalk.h"
#include "ct_test.h"
#include "test_models.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
    const char *dir = ct_test_make("0.6b-base", "spkenc_full_06b", 3);
    CHECK(dir != NULL);
    if (!dir) return ct_test_finish();
    char err[1024];
    ct_model *m = NULL;
    double t0 = now_s();
    CHECKF(ct_model_load(dir, NULL, &m, err, sizeof err) == CT_OK, "%s", err);
    printf("0.6b-base load: %.2f s\n", now_s() - t0);
    if (m) {
        const size_t n = 240000; /* 10 s at 24 kHz */
        float *pcm = malloc(n * sizeof *pcm), *x = malloc(1024 * sizeof *x), *y = malloc(1024 * sizeof *y);
        uint32_t r = 7;
        for (size_t i = 0; i < n; i++) {
            r = r * 1664525u + 1013904223u;
            double t = (double)i / 24000;
            pcm[i] = (float)(0.3 * sin(2 * 3.14159265358979 * (150 + 40 * sin(t)) * t) +
                             0.05 * ((double)(r >> 8) / 16777216.0 - 0.5));
        }
        double best = 1e30;
        for (int k = 0; k < 3; k++) {
            double t1 = now_s();
            ct_status st = ct_model_speaker_embed(m, pcm, n, k ? y : x, 1024, err, sizeof err);
            double dt = now_s() - t1;
            CHECKF(st == CT_OK, "%s", err);
            if (dt < best) best = dt;
            if (k) CHECK(memcmp(x, y, 1024 * sizeof *x) == 0);
        }
        int finite = 1;
        double norm = 0;
        for (int i = 0; i < 1024; i++) finite &= isfinite(x[i]), norm += (double)x[i] * x[i];
        CHECK(finite && norm > 0);
        printf("0.6b-base speaker encoder, 10 s clip (938 mel frames), 1 thread: %.1f ms (best of 3)\n",
               best * 1e3);
        free(pcm), free(x), free(y);
    }
    ct_model_free(m);
    ct_test_rm_rf(dir);
    return ct_test_finish();
}
