/* Codec decoder parity with the OFFICIAL Qwen3-TTS-Tokenizer-12Hz decoder (qwen-tts 0.1.1,
 * transformers 4.57.3, f32, eager): references made by tools/parity/make_codec_parity.py and
 * stored in tests/data/codec_parity/ (see its README.md and manifest.json).
 *   small: an official model saved by the official save_pretrained (reduced widths, explicit
 *          head_dim 12 != 32/4, GQA 4/2, 3 layers, window 72, 120 frames, encoder tensors present);
 *   tiny:   our make-model "tiny" seed 5 checkpoint (regenerated here), 60 frames;
 *   full06: our make-model "0.6b-customvoice" seed 5 checkpoint (full widths 1024/512/1536,
 *           8 layers, 271 tensors), 30 frames; regenerated under CT_BIN_DIR (~2.3 GB
 *           transient, the talker file is deleted at once, all removed afterwards; ~20 s).
 *           Set CT_CODEC_PARITY_SKIP_FULL=1 to skip it in quick local runs.
 * Per case: one-shot decode vs official forward (NMSE <= 1e-8), streaming decode with 1-frame
 * pushes and with the 2,4,8,16,25 ramp vs official forward (NMSE <= 1e-8), and windowed
 * decode (ct_codec_decode_window driven like the official chunked_decode) vs every stored
 * official chunked_decode output (NMSE <= 1e-8). Every figure is printed. */
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
#include "io/safetensors.h"
#include "model/make_model.h"

#define CPAR_DATA CT_SRC_DIR "/tests/data/codec_parity"
#define CPAR_MAX_NMSE 1e-8
#define CPAR_MAX_CHUNK 25

static double cpar_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Streams codes through a fresh stream: ramp == NULL -> 1-frame pushes, else the pushes
 * ramp[0..n_ramp) followed by ramp[n_ramp-1] until the end. */
static ct_status cpar_stream(ct_codec_stream *s, const int32_t *codes, int nf, int g, int spf,
                             const int *ramp, int n_ramp, float *pcm, char *err, size_t errcap) {
    ct_codec_stream_reset(s);
    ct_status st = CT_OK;
    int f = 0, k = 0;
    while (f < nf && st == CT_OK) {
        int m = ramp ? ramp[k < n_ramp ? k : n_ramp - 1] : 1;
        k++;
        if (m > nf - f) m = nf - f;
        st = ct_codec_stream_push(s, codes + (size_t)f * g, m, pcm + (size_t)f * spf, err, errcap);
        f += m;
    }
    return st;
}

/* The official chunked_decode(codes, chunk_size, left_context_size) schedule driven through
 * ct_codec_decode_window: chunk [start, end), context = L if start - L > 0 else start. */
static ct_status cpar_chunked(const ct_codec *c, const int32_t *codes, int nf, int g, int spf,
                              int chunk, int ctx_max, float *pcm, char *err, size_t errcap) {
    for (int start = 0; start < nf;) {
        int end = start + chunk < nf ? start + chunk : nf;
        int ctx = start - ctx_max > 0 ? ctx_max : start;
        ct_status st = ct_codec_decode_window(c, ctx ? codes + (size_t)(start - ctx) * g : NULL, ctx,
                                              codes + (size_t)start * g, end - start,
                                              pcm + (size_t)start * spf, err, errcap);
        if (st != CT_OK) return st;
        start = end;
    }
    return CT_OK;
}

/* Runs every comparison of one case: model_dir holds speech_tokenizer/, ref_path the
 * official references (codes I32 [T][16], pcm F32 [T*spf], pcm_chunked_C_L F32 [T*spf]). */
static void cpar_case(const char *name, const char *model_dir, const char *ref_path) {
    char err[512] = "";
    ct_st_file *ref = NULL;
    ct_status st = ct_st_open(ref_path, &ref, err, sizeof err);
    CHECKF(st == CT_OK, "%s: open %s: %s", name, ref_path, err);
    if (st != CT_OK) return;
    ct_codec *c = NULL;
    double t0 = cpar_now();
    st = ct_codec_load(model_dir, &c, err, sizeof err);
    CHECKF(st == CT_OK, "%s: ct_codec_load(%s): %s", name, model_dir, err);
    if (st != CT_OK) {
        ct_st_close(ref);
        return;
    }
    printf("[%s] load %.2f s\n", name, cpar_now() - t0);
    const int G = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c);
    CHECKF(G == 16 && spf == 1920 && ct_codec_sample_rate(c) == 24000, "%s: G %d spf %d", name, G, spf);
    const ct_st_tensor *tc = ct_st_find(ref, "codes"), *tp = ct_st_find(ref, "pcm");
    int ok = tc && tp && tc->dtype == CT_DT_I32 && tc->ndim == 2 && tc->shape[1] == G &&
             tp->dtype == CT_DT_F32 && tp->ndim == 1 && tp->shape[0] == tc->shape[0] * spf;
    CHECKF(ok, "%s: reference tensors codes/pcm missing or mis-shaped", name);
    if (!ok) {
        ct_codec_free(c);
        ct_st_close(ref);
        return;
    }
    const int NF = (int)tc->shape[0];
    const size_t NS = (size_t)NF * spf;
    const int32_t *codes = tc->data;
    const float *want = tp->data;
    double en = 0;
    for (size_t i = 0; i < NS; i++) en += (double)want[i] * want[i];
    CHECKF(en > 1e-3 * (double)NS, "%s: official output is (nearly) silent: rms %g", name, sqrt(en / (double)NS));
    float *got = malloc(sizeof(float) * NS);
    CHECK(got != NULL);
    if (!got) {
        ct_codec_free(c);
        ct_st_close(ref);
        return;
    }

    /* one-shot */
    t0 = cpar_now();
    st = ct_codec_decode(c, codes, NF, got, err, sizeof err);
    double dt = cpar_now() - t0;
    CHECKF(st == CT_OK, "%s: decode: %s", name, err);
    double e = st == CT_OK ? ct_nmse(got, want, NS) : 1e30;
    printf("[%s] %d frames, rms %.4f: one-shot vs official forward: nmse %.3e (%.1f ms/frame)\n", name, NF,
           sqrt(en / (double)NS), e, dt * 1e3 / NF);
    CHECKF(e <= CPAR_MAX_NMSE, "%s: one-shot nmse %g > %g", name, e, CPAR_MAX_NMSE);
    float maxd = 0;
    for (size_t i = 0; i < NS; i++) {
        float d = fabsf(got[i] - want[i]);
        if (d > maxd) maxd = d;
    }
    printf("[%s] one-shot max |diff| %.3e\n", name, (double)maxd);

    /* streaming */
    ct_codec_stream *s = NULL;
    st = ct_codec_stream_create(c, CPAR_MAX_CHUNK, &s, err, sizeof err);
    CHECKF(st == CT_OK, "%s: stream_create: %s", name, err);
    if (st == CT_OK) {
        static const int ramp[5] = {2, 4, 8, 16, 25};
        for (int pass = 0; pass < 2; pass++) {
            memset(got, 0, sizeof(float) * NS);
            t0 = cpar_now();
            st = cpar_stream(s, codes, NF, G, spf, pass ? ramp : NULL, 5, got, err, sizeof err);
            dt = cpar_now() - t0;
            CHECKF(st == CT_OK, "%s: push: %s", name, err);
            e = st == CT_OK ? ct_nmse(got, want, NS) : 1e30;
            printf("[%s] stream (%s) vs official forward: nmse %.3e (%.1f ms/frame)\n", name,
                   pass ? "ramp 2,4,8,16,25,25.." : "1-frame pushes", e, dt * 1e3 / NF);
            CHECKF(e <= CPAR_MAX_NMSE, "%s: stream pass %d nmse %g > %g", name, pass, e, CPAR_MAX_NMSE);
        }
        ct_codec_stream_free(s);
    }

    /* windowed, one comparison per stored official chunked_decode output */
    for (size_t i = 0; i < ct_st_count(ref); i++) {
        const ct_st_tensor *t = ct_st_at(ref, i);
        int chunk = 0, ctx = 0;
        if (sscanf(t->name, "pcm_chunked_%d_%d", &chunk, &ctx) != 2) continue;
        ok = t->dtype == CT_DT_F32 && t->ndim == 1 && (size_t)t->shape[0] == NS && chunk > 0 && ctx >= 0;
        CHECKF(ok, "%s: %s mis-shaped", name, t->name);
        if (!ok) continue;
        memset(got, 0, sizeof(float) * NS);
        st = cpar_chunked(c, codes, NF, G, spf, chunk, ctx, got, err, sizeof err);
        CHECKF(st == CT_OK, "%s: window: %s", name, err);
        e = st == CT_OK ? ct_nmse(got, t->data, NS) : 1e30;
        double eo = ct_nmse(t->data, want, NS);
        printf("[%s] window (chunk %d, context %d) vs official chunked_decode: nmse %.3e "
               "(official chunked vs official one-shot: %.3e)\n", name, chunk, ctx, e, eo);
        CHECKF(e <= CPAR_MAX_NMSE, "%s: window %d/%d nmse %g > %g", name, chunk, ctx, e, CPAR_MAX_NMSE);
    }
    free(got);
    ct_codec_free(c);
    ct_st_close(ref);
}

/* Regenerates make-model checkpoint (preset, seed) under CT_BIN_DIR, runs the case, and
 * deletes the directory. */
static void cpar_make_model_case(const char *name, const char *preset, uint64_t seed) {
    char tmp[600], dir[700], big[800], ref[600], err[512] = "";
    snprintf(tmp, sizeof tmp, "%s/codec_parity_%s_XXXXXX", CT_BIN_DIR, name);
    if (!mkdtemp(tmp)) {
        CHECKF(0, "%s: mkdtemp(%s) failed", name, tmp);
        return;
    }
    snprintf(dir, sizeof dir, "%s/m", tmp);
    double t0 = cpar_now();
    ct_status st = ct_make_model(preset, seed, dir, CT_SRC_DIR "/assets/qwen3-tokenizer", 1, NULL, NULL, err,
                                 sizeof err);
    CHECKF(st == CT_OK, "%s: make_model(%s, %llu): %s", name, preset, (unsigned long long)seed, err);
    if (st == CT_OK) {
        printf("[%s] make_model %s seed %llu: %.1f s\n", name, preset, (unsigned long long)seed, cpar_now() - t0);
        snprintf(big, sizeof big, "%s/model.safetensors", dir); /* talker weights: not needed */
        unlink(big);
        snprintf(ref, sizeof ref, "%s/%s/ref.safetensors", CPAR_DATA, name);
        cpar_case(name, dir, ref);
    }
    ct_test_rm_rf(tmp);
}

int main(void) {
    cpar_case("small", CPAR_DATA "/small", CPAR_DATA "/small/ref.safetensors");
    cpar_make_model_case("tiny", "tiny", 5);
    const char *skip = getenv("CT_CODEC_PARITY_SKIP_FULL");
    if (skip && *skip && strcmp(skip, "0") != 0)
        printf("[full06] skipped (CT_CODEC_PARITY_SKIP_FULL)\n");
    else
        cpar_make_model_case("full06", "0.6b-customvoice", 5);
    return ct_test_finish();
}
