/* Speaker encoder parity (model/spkenc.h, audio/mel.h, audio/audio_in.h) against the official
   qwen-tts code: tests/data/parity/base06 (widths 16, tools/parity/make_parity.py) and
   tests/data/spk_parity (widths 64/192, tools/parity/make_spk_parity.py: a speaker encoder
   loaded from a directory holding only config.json and speaker_encoder.safetensors) for the
   mel front end and the x-vector, f32 path, NMSE <= 1e-8 each; the libsoxr resample of a
   44.1 kHz stereo clip against librosa's soxr_hq (tolerances at RESAMPLE_*). Then the public
   entry on make-model's tiny-base. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_in.h"
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

/* Our loader (Debian's libsndfile 1.2.0 + libsoxr 0.1.3) against the wrapper's (soundfile's
   libsndfile 1.2.2 + python-soxr 1.1.0's bundled libsoxr): bit-identical on this machine
   (max |diff| 0); the bound leaves room for another libsoxr build's float rounding only. */
#define RESAMPLE_MAX_ABS 1e-6
#define RESAMPLE_XVEC_NMSE 1e-8

static void test_wide(void) {
    const char *dir = CT_SRC_DIR "/tests/data/spk_parity";
    char err[512], path[1024];
    ct_config cfg;
    CHECKF(ct_config_load(dir, &cfg, err, sizeof err) == CT_OK, "%s", err);
    CHECK(cfg.spk.channels[0] == 64 && cfg.spk.channels[4] == 192 && cfg.spk.enc_dim == 64 &&
          cfg.spk.attention == 16 && cfg.spk.se_channels == 16);
    ct_st_file *ref = NULL, *w = NULL;
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    CHECKF(ct_st_open(path, &ref, err, sizeof err) == CT_OK, "%s", err);
    snprintf(path, sizeof path, "%s/speaker_encoder.safetensors", dir);
    CHECKF(ct_st_open(path, &w, err, sizeof err) == CT_OK, "%s", err);
    ct_spkenc *enc = NULL;
    ct_mel *mf = NULL;
    if (ref && w) CHECKF(ct_spkenc_load(w, &cfg.spk, &enc, err, sizeof err) == CT_OK, "%s", err);
    CHECK(ct_mel_create(&mf, err, sizeof err) == CT_OK);
    if (!enc || !mf) goto out;
    CHECK(ct_st_find(w, "speaker_encoder.fc.weight")->dtype == CT_DT_BF16);
    const char *clips[] = {"a", "b"};
    for (int c = 0; c < 2; c++) {
        char k[32];
        size_t nw = 0, nm = 0, nx = 0;
        snprintf(k, sizeof k, "%s.wav", clips[c]);
        const float *wav = ref_f32(ref, k, &nw);
        snprintf(k, sizeof k, "%s.mel", clips[c]);
        const float *mref = ref_f32(ref, k, &nm);
        snprintf(k, sizeof k, "%s.xvector", clips[c]);
        const float *xref = ref_f32(ref, k, &nx);
        CHECK(wav && mref && xref && nx == 64);
        if (!wav || !mref || !xref || nx != 64) continue;
        const int T = ct_mel_frames(nw);
        CHECK((size_t)T * CT_MEL_BINS == nm);
        float *mel = malloc(nm * sizeof *mel), xv[64];
        CHECK(ct_mel_compute(mf, wav, nw, mel, err, sizeof err) == CT_OK);
        double e = ct_nmse(mel, mref, nm);
        printf("clip %s (%.2f s, %d frames): mel NMSE %.3g", clips[c], nw / 24000.0, T, e);
        CHECKF(e <= NMSE_MAX, "clip %s mel NMSE %g", clips[c], e);
        CHECK(ct_spkenc_forward(enc, mref, T, xv, err, sizeof err) == CT_OK);
        e = ct_nmse(xv, xref, 64);
        printf(", x-vector NMSE %.3g from the official mel", e);
        CHECKF(e <= NMSE_MAX, "clip %s x-vector NMSE %g", clips[c], e);
        CHECK(ct_spkenc_embed(enc, wav, nw, xv, err, sizeof err) == CT_OK);
        e = ct_nmse(xv, xref, 64);
        printf(", %.3g end to end\n", e);
        CHECKF(e <= NMSE_MAX, "clip %s end-to-end x-vector NMSE %g", clips[c], e);
        free(mel);
    }
    /* the resample case: the file through our loader against the wrapper's loading path */
    size_t nsrc = 0, n24 = 0, nx = 0;
    const float *src = ref_f32(ref, "r.src_mono", &nsrc), *r24 = ref_f32(ref, "r.wav24k", &n24),
                *rx = ref_f32(ref, "r.xvector", &nx);
    ct_ref_audio a;
    snprintf(path, sizeof path, "%s/clip44k_stereo.flac", dir);
    CHECKF(ct_ref_audio_load_file(path, &a, err, sizeof err) == CT_OK, "%s", err);
    CHECK(src && r24 && rx && a.pcm);
    if (src && r24 && rx && a.pcm) {
        CHECK(a.src_rate == 44100 && a.src_channels == 2 &&
              (a.note_mask & (CT_REF_NOTE_DOWNMIXED | CT_REF_NOTE_RESAMPLED)));
        CHECKF(a.n == n24, "resampled length %zu, official %zu", a.n, n24);
        float *again = NULL;
        size_t nm2 = 0;
        double maxd = 0, e;
        for (size_t i = 0; i < n24 && i < a.n; i++) maxd = fmax(maxd, fabs(a.pcm[i] - r24[i]));
        e = ct_nmse(a.pcm, r24, a.n < n24 ? a.n : n24);
        printf("44.1 kHz stereo -> 24 kHz: max |diff| %.3g, NMSE %.3g vs librosa soxr_hq\n", maxd, e);
        CHECKF(maxd <= RESAMPLE_MAX_ABS, "resample max diff %g", maxd);
        /* our resampler on the official mono source: the same samples as the file path */
        CHECK(ct_ref_resample(src, nsrc, 44100, &again, &nm2, err, sizeof err) == CT_OK);
        CHECK(nm2 == a.n && again && memcmp(again, a.pcm, a.n * sizeof(float)) == 0);
        free(again);
        float xv[64];
        CHECK(ct_spkenc_embed(enc, a.pcm, a.n, xv, err, sizeof err) == CT_OK);
        e = ct_nmse(xv, rx, 64);
        printf("44.1 kHz clip x-vector through our loader: NMSE %.3g\n", e);
        CHECKF(e <= RESAMPLE_XVEC_NMSE, "x-vector NMSE %g", e);
    }
    ct_ref_audio_free(&a);
out:
    ct_spkenc_free(enc);
    ct_mel_free(mf);
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
    test_wide();
    test_public();
    return ct_test_finish();
}
