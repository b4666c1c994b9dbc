/* Streaming time-stretch on libsonic (see speed.h). */
#include "audio/speed.h"

#include <math.h>
#include <sonic.h>
#include <stdlib.h>

struct ct_speed {
    sonicStream st;
    int flushed;
};

ct_status ct_speed_create(int rate, float speed, ct_speed **out, char *err, size_t errcap) {
    *out = NULL;
    if (!isfinite(speed) || speed < CT_SPEED_MIN || speed > CT_SPEED_MAX)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speed %g is outside [%g, %g]", (double)speed,
                       (double)CT_SPEED_MIN, (double)CT_SPEED_MAX);
    if (rate <= 0) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "speed: sample rate %d", rate);
    ct_speed *s = calloc(1, sizeof *s);
    if (!s || !(s->st = sonicCreateStream(rate, 1))) {
        free(s);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "speed: out of memory");
    }
    sonicSetSpeed(s->st, speed);
    sonicSetQuality(s->st, 1); /* the higher-quality pitch search: speech, not music */
    *out = s;
    return CT_OK;
}

ct_status ct_speed_run(ct_speed *s, const float *pcm, size_t n, int flush, float *out, size_t cap, size_t *n_out,
                       char *err, size_t errcap) {
    *n_out = 0;
    while (n > 0) { /* sonic takes int counts */
        int k = n > (1u << 20) ? 1 << 20 : (int)n;
        if (!sonicWriteFloatToStream(s->st, (float *)pcm, k))
            return ct_errf(err, errcap, CT_ERR_NOMEM, "speed: out of memory");
        pcm += k;
        n -= (size_t)k;
    }
    if (flush && !s->flushed) {
        if (!sonicFlushStream(s->st)) return ct_errf(err, errcap, CT_ERR_NOMEM, "speed: out of memory");
        s->flushed = 1;
    }
    int want = cap > (1u << 30) ? 1 << 30 : (int)cap;
    int got = want > 0 ? sonicReadFloatFromStream(s->st, out, want) : 0;
    *n_out = got > 0 ? (size_t)got : 0;
    return CT_OK;
}

void ct_speed_free(ct_speed *s) {
    if (!s) return;
    sonicDestroyStream(s->st);
    free(s);
}
