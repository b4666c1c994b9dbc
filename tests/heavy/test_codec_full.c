/* Full-size codec decoder check (0.6b-customvoice widths: 1024/512/1536, 8 layers): load the
 * published layout, decode 30 random frames one-shot and by streaming pushes (1-frame steps
 * and the 2,4,8,16 ramp) and require NMSE <= 1e-10, output finite and in [-1, 1].
 * Set CT_CODEC_FULL_MODEL=<model dir> to reuse an existing directory instead of writing a
 * random-weight one (~2.3 GB transient under /tmp, removed afterwards). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "ct_test.h"
#include "test_models.h"
#include "model/make_model.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    char tmp[] = "/tmp/ct_codec_full_XXXXXX", dir[1024], err[512] = "";
    const char *env = getenv("CT_CODEC_FULL_MODEL");
    int made = 0;
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s", env);
    } else {
        if (!mkdtemp(tmp)) {
            CHECKF(0, "mkdtemp failed");
            return ct_test_finish();
        }
        snprintf(dir, sizeof dir, "%s/m", tmp);
        ct_status st = ct_make_model("0.6b-customvoice", 3, dir, CT_SRC_DIR "/assets/qwen3-tokenizer", 1, NULL,
                                     NULL, err, sizeof err);
        CHECKF(st == CT_OK, "make_model: %s", err);
        if (st != CT_OK) {
            ct_test_rm_rf(tmp);
            return ct_test_finish();
        }
        char big[1100];
        snprintf(big, sizeof big, "%s/model.safetensors", dir); /* talker weights: not needed */
        unlink(big);
        made = 1;
    }
    ct_codec *c = NULL;
    ct_status st = ct_codec_load(dir, &c, err, sizeof err);
    CHECKF(st == CT_OK, "load: %s", err);
    if (st == CT_OK) {
        enum { NF = 30 };
        const int G = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c);
        CHECK(G == 16 && spf == 1920);
        int32_t *codes = malloc(sizeof(int32_t) * NF * (size_t)G);
        uint32_t r = 99;
        for (int i = 0; i < NF * G; i++) {
            r = r * 1664525u + 1013904223u;
            codes[i] = (int32_t)((r >> 8) % 2048);
        }
        float *ref = malloc(sizeof(float) * NF * (size_t)spf), *out = malloc(sizeof(float) * NF * (size_t)spf);
        double t0 = now_s();
        st = ct_codec_decode(c, codes, NF, ref, err, sizeof err);
        double dt = now_s() - t0;
        CHECKF(st == CT_OK, "decode: %s", err);
        printf("full-size one-shot: %.1f ms/frame\n", dt * 1e3 / NF);
        int ok = 1;
        double en = 0;
        for (int i = 0; i < NF * spf; i++) {
            ok &= isfinite(ref[i]) && ref[i] >= -1.0f && ref[i] <= 1.0f;
            en += (double)ref[i] * ref[i];
        }
        CHECK(ok);
        CHECK(en > 0);
        ct_codec_stream *s = NULL;
        st = ct_codec_stream_create(c, 16, &s, err, sizeof err);
        CHECKF(st == CT_OK, "stream: %s", err);
        if (st == CT_OK) {
            static const int ramp[5] = {1, 2, 4, 8, 16};
            for (int pass = 0; pass < 2; pass++) {
                ct_codec_stream_reset(s);
                int f = 0, k = 0;
                while (f < NF && st == CT_OK) {
                    int m = pass == 0 ? 1 : ramp[k++ % 5];
                    if (m > NF - f) m = NF - f;
                    st = ct_codec_stream_push(s, codes + (size_t)f * G, m, out + (size_t)f * spf, err, sizeof err);
                    f += m;
                }
                CHECKF(st == CT_OK, "push: %s", err);
                double e = ct_nmse(out, ref, (size_t)NF * spf);
                CHECKF(e <= 1e-10, "full-size stream pass %d nmse %g", pass, e);
                printf("full-size stream (%s) vs one-shot: nmse %g\n", pass == 0 ? "1-frame steps" : "ramp 1,2,4,8,16", e);
            }
            ct_codec_stream_free(s);
        }
        free(codes);
        free(ref);
        free(out);
    }
    ct_codec_free(c);
    if (made) ct_test_rm_rf(tmp);
    return ct_test_finish();
}
