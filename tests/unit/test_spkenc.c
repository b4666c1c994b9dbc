/* Speaker encoder parity (model/spkenc.h, audio/mel.h) against the official qwen-tts code:
   tests/data/parity/base06 (widths 16, tools/parity/make_parity.py) for the mel front end and
   the x-vector. f32 path: NMSE <= 1e-8 each. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "ct_test.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/spkenc.h"
#include "test_models.h"

#define NMSE_MAX 1e-8

static const float *ref_f32(const ct_st_file *f, const char *name, size_t *n) {
    const ct_st_tensor *t = ct_st_find(f, name);
    if (!t || t->dtype != CT_DT_F32) {
        fprintf(stderr, "reference tensor %s missing or not F32\n", name);
        return NULL;
    }
    *n = (size_t)(t->nbytes / sizeof(float));
    return t->data;
}

static void test_base06(void) {
    const char *dir = CT_SRC_DIR "/tests/data/parity/base06";
    char err[512], path[1024];
    ct_config cfg;
    CHECKF(ct_config_load(dir, &cfg, err, sizeof err) == CT_OK, "%s", err);
    CHECK(cfg.kind == CT_KIND_BASE && cfg.spk_enc_dim == 16 && cfg.spk.channels[4] == 48 &&
          cfg.spk.attention == 8 && cfg.spk.se_channels == 8 && cfg.spk.n_layers == 5);
    ct_st_file *ref = NULL, *w = NULL;
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    CHECKF(ct_st_open(path, &ref, err, sizeof err) == CT_OK, "%s", err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECKF(ct_st_open(path, &w, err, sizeof err) == CT_OK, "%s", err);
    if (!ref || !w) goto out;
    size_t nw = 0, nm = 0, nx = 0;
    const float *wav = ref_f32(ref, "spk.wav", &nw), *mel_ref = ref_f32(ref, "spk.mel", &nm),
                *xv_ref = ref_f32(ref, "spk.xvector", &nx);
    CHECK(wav && mel_ref && xv_ref);
    if (!wav || !mel_ref || !xv_ref) goto out;
    const int T = ct_mel_frames(nw);
    CHECKF((size_t)T * CT_MEL_BINS == nm, "frames %d for %zu samples, reference %zu values", T, nw, nm);

    ct_mel *mf = NULL;
    CHECKF(ct_mel_create(&mf, err, sizeof err) == CT_OK, "%s", err);
    float *mel = malloc(nm * sizeof *mel);
    CHECK(ct_mel_compute(mf, wav, nw, mel, err, sizeof err) == CT_OK);
    double e = ct_nmse(mel, mel_ref, nm);
    printf("base06 mel: NMSE %.3g (%d frames)\n", e, T);
    CHECKF(e <= NMSE_MAX, "mel NMSE %g", e);
    /* too short for the reflect pad */
    CHECK(ct_mel_frames(384) == 0 && ct_mel_frames(385) == 1);
    CHECK(ct_mel_compute(mf, wav, 384, mel, err, sizeof err) == CT_ERR_INVALID_ARG);

    ct_spkenc *enc = NULL;
    CHECKF(ct_spkenc_load(w, &cfg.spk, &enc, err, sizeof err) == CT_OK, "%s", err);
    if (enc) {
        float xv[16], xv2[16];
        /* the encoder alone, on the official mel */
        CHECK(ct_spkenc_forward(enc, mel_ref, T, xv, err, sizeof err) == CT_OK);
        e = ct_nmse(xv, xv_ref, 16);
        printf("base06 x-vector from the official mel: NMSE %.3g\n", e);
        CHECKF(e <= NMSE_MAX, "x-vector NMSE %g", e);
        /* end to end: samples -> our mel -> x-vector */
        CHECK(ct_spkenc_embed(enc, wav, nw, xv2, err, sizeof err) == CT_OK);
        e = ct_nmse(xv2, xv_ref, 16);
        printf("base06 x-vector end to end: NMSE %.3g\n", e);
        CHECKF(e <= NMSE_MAX, "x-vector NMSE %g", e);
        /* too few frames for the widest reflect pad (dilation 4, k 3: 5 frames) */
        CHECK(ct_spkenc_min_frames(enc) == 5);
        CHECK(ct_spkenc_forward(enc, mel_ref, 4, xv, err, sizeof err) == CT_ERR_INVALID_ARG);
        CHECKF(strstr(err, "4 mel frames (at least 5"), "%s", err);
        ct_spkenc_free(enc);
    }
    free(mel);
    ct_mel_free(mf);
out:
    ct_st_close(ref);
    ct_st_close(w);
}

typedef struct {
    const ct_model *m;
    const float *pcm;
    size_t n;
    float x[128];
    ct_status st;
} job;

static void *run_job(void *p) {
    job *j = p;
    char err[256];
    j->st = ct_model_speaker_embed(j->m, j->pcm, j->n, j->x, 128, err, sizeof err);
    return NULL;
}

/* The public entry on make-model's tiny-base (the class-default 512/1536 channel encoder):
   finite, the same bits on every call and from concurrent threads; the refusals. */
static void test_public(void) {
    const char *dir = ct_test_make("tiny-base", "spkenc_tiny_base", 5);
    const char *cv = ct_test_make("tiny", "spkenc_tiny", 5);
    CHECK(dir && cv);
    if (!dir || !cv) return;
    char err[512];
    ct_model *m = NULL, *mc = NULL;
    CHECKF(ct_model_load(dir, NULL, &m, err, sizeof err) == CT_OK, "%s", err);
    CHECKF(ct_model_load(cv, NULL, &mc, err, sizeof err) == CT_OK, "%s", err);
    if (!m || !mc) goto out;
    const size_t n = 36000; /* 1.5 s */
    float *pcm = malloc(n * sizeof *pcm);
    uint32_t r = 12345;
    for (size_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        pcm[i] = 0.3f * sinf(0.05f * (float)i) + 0.1f * ((float)(r >> 8) / 16777216.0f - 0.5f);
    }
    float x[128], y[128];
    CHECKF(ct_model_speaker_embed(m, pcm, n, x, 128, err, sizeof err) == CT_OK, "%s", err);
    int finite = 1;
    double norm = 0;
    for (int i = 0; i < 128; i++) finite &= isfinite(x[i]), norm += (double)x[i] * x[i];
    CHECK(finite && norm > 0);
    CHECK(ct_model_speaker_embed(m, pcm, n, y, 128, err, sizeof err) == CT_OK);
    CHECK(memcmp(x, y, sizeof x) == 0);
    job j[3];
    pthread_t th[3];
    for (int k = 0; k < 3; k++) {
        j[k] = (job){m, pcm, n, {0}, CT_ERR_INTERNAL};
        pthread_create(&th[k], NULL, run_job, &j[k]);
    }
    for (int k = 0; k < 3; k++) {
        pthread_join(th[k], NULL);
        CHECK(j[k].st == CT_OK && memcmp(j[k].x, x, sizeof x) == 0);
    }
    /* refusals */
    CHECK(ct_model_speaker_embed(m, pcm, 23999, x, 128, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "at least 1 s"), "%s", err);
    CHECK(ct_model_speaker_embed(m, pcm, n, x, 127, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "the x-vector has 128"), "%s", err);
    CHECK(ct_model_speaker_embed(mc, pcm, n, x, 128, err, sizeof err) == CT_ERR_UNSUPPORTED);
    CHECKF(strstr(err, "not Base"), "%s", err);
    pcm[100] = NAN;
    CHECK(ct_model_speaker_embed(m, pcm, n, x, 128, err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "sample 100 is not a finite"), "%s", err);
    free(pcm);
    /* a config the encoder cannot run, and the tensors not matching the config */
    ct_model *bad = NULL;
    CHECK(ct_test_edit(dir, "config.json", "\"sample_rate\": 24000",
                       "\"sample_rate\": 24000, \"enc_channels\": [512, 512, 512, 512, 1024]") == 0);
    CHECK(ct_model_load(dir, NULL, &bad, err, sizeof err) == CT_ERR_FORMAT && !bad);
    CHECKF(strstr(err, "MFA width enc_channels[4] = 1024 must be the SE-Res2 widths summed (1536)"), "%s", err);
    CHECK(ct_test_edit(dir, "config.json", "[512, 512, 512, 512, 1024]", "[256, 256, 256, 256, 768]") == 0);
    CHECK(ct_model_load(dir, NULL, &bad, err, sizeof err) == CT_ERR_FORMAT && !bad);
    CHECKF(strstr(err, "'speaker_encoder.blocks.0.conv.weight' has shape [512, 128, 5], expected [256, 128, 5]"), "%s", err);
    CHECK(ct_test_edit(dir, "config.json", "\"sample_rate\": 24000", "\"sample_rate\": 16000") == 0);
    CHECK(ct_model_load(dir, NULL, &bad, err, sizeof err) == CT_ERR_FORMAT && !bad);
    CHECKF(strstr(err, "mel_dim 128 at 16000 Hz"), "%s", err);
out:
    ct_model_free(m);
    ct_model_free(mc);
}

int main(void) {
    test_base06();
    test_public();
    return ct_test_finish();
}
