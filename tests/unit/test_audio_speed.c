/* Time-stretch (src/audio/speed.c): the length scales by 1/speed, the pitch stays (zero
   crossings per second of a tone), small pushes give what one big push gives, and the range is
   enforced. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/speed.h"
#include "ct_test.h"

#define RATE 24000

/* Zero crossings per second over x[0..n). */
static double zc_rate(const float *x, size_t n) {
    size_t z = 0;
    for (size_t i = 1; i < n; i++) z += (x[i - 1] < 0) != (x[i] < 0);
    return (double)z * RATE / (double)n;
}

/* Stretches in[0..n) in pushes of `push` samples; returns the output (malloc'd), *n_out. */
static float *stretch(float speed, const float *in, size_t n, size_t push, size_t *n_out) {
    ct_speed *s = NULL;
    char err[256];
    if (ct_speed_create(RATE, speed, &s, err, sizeof err) != CT_OK) return NULL;
    size_t cap = n * 5 + 4096, total = 0;
    float *out = malloc(sizeof(float) * cap);
    for (size_t i = 0; i <= n; i += push) {
        size_t k = i + push <= n ? push : n - i;
        int last = i + push > n;
        size_t got = 0;
        const float *p = in + i;
        do {
            CHECK(ct_speed_run(s, p, k, last, out + total, 1000, &got, err, sizeof err) == CT_OK);
            total += got;
            k = 0;
        } while (got == 1000 && total + 1000 <= cap);
        if (last) break;
    }
    ct_speed_free(s);
    *n_out = total;
    return out;
}

int main(void) {
    size_t n = RATE * 2;
    float *tone = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) tone[i] = 0.4f * sinf(2.0f * 3.14159265f * 220.0f * (float)i / RATE);
    double zc0 = zc_rate(tone, n);
    static const float speeds[] = {0.25f, 0.5f, 1.5f, 2.0f, 4.0f};
    for (size_t k = 0; k < sizeof speeds / sizeof speeds[0]; k++) {
        size_t m = 0;
        float *o = stretch(speeds[k], tone, n, 1920, &m);
        CHECK(o != NULL);
        double want = (double)n / speeds[k];
        CHECKF(fabs((double)m - want) < 0.02 * want + 960, "speed %g: %zu samples, want %.0f", (double)speeds[k], m, want);
        double zc = zc_rate(o + m / 10, m * 8 / 10);
        CHECKF(fabs(zc - zc0) < 0.05 * zc0, "speed %g: %.1f crossings/s, the tone had %.1f", (double)speeds[k], zc, zc0);
        /* the push size does not change the result */
        size_t m2 = 0;
        float *o2 = stretch(speeds[k], tone, n, n, &m2);
        CHECK(o2 && m2 == m && memcmp(o, o2, sizeof(float) * m) == 0);
        free(o);
        free(o2);
    }
    ct_speed *s = NULL;
    char err[256];
    CHECK(ct_speed_create(RATE, 4.5f, &s, err, sizeof err) == CT_ERR_INVALID_ARG && !s && strstr(err, "[0.25, 4]"));
    CHECK(ct_speed_create(RATE, 0.2f, &s, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECK(ct_speed_create(RATE, NAN, &s, err, sizeof err) == CT_ERR_INVALID_ARG);
    free(tone);
    return ct_test_finish();
}
