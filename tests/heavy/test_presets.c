/* Every make-model preset (full-size shapes) loads and decodes 10 frames. On the 0.6B
   CustomVoice preset every weight format (bf16, int8, int4, mixed: AMX, the integer-dot
   kernels and their fallbacks at full width) gives identical codes for 1 and 2 threads, and
   two streams decoded as one batch give each stream's solo codes. Heavy: writes up to
   ~4.3 GB per preset into the build directory and deletes it afterwards. */
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

static void rm_model(const char *dir) {
    static const char *files[] = {"config.json", "generation_config.json", "model.safetensors",
                                  "vocab.json", "merges.txt", "tokenizer_config.json",
                                  "preprocessor_config.json", "speech_tokenizer/config.json",
                                  "speech_tokenizer/preprocessor_config.json",
                                  "speech_tokenizer/model.safetensors", NULL};
    char p[1200];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    snprintf(p, sizeof p, "%s/speech_tokenizer", dir);
    remove(p);
    remove(dir);
}

enum { INV_FRAMES = 6 };

/* INV_FRAMES sampled frames of g on m with nt threads into codes; returns the frame count. */
static int solo_codes(const ct_model *m, int nt, const ct_gen_params *g, int32_t *codes) {
    char err[256];
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 256;
    sp.n_threads = nt;
    ct_session *s = NULL;
    if (ct_session_create(m, &sp, &s, err, sizeof err) != CT_OK) return -1;
    int n = 0, got = 1;
    if (ct_session_start(s, g) == CT_OK)
        while (n < INV_FRAMES && ct_session_next_frame(s, codes + 16 * n, &got) == CT_OK && got) n++;
    ct_session_free(s);
    return n;
}

/* Thread-count and batch invariance of every weight format on the model in dir. */
static void check_formats(const char *dir) {
    static const char *fmts[] = {"bf16", "int8", "int4", "mixed"};
    char err[1024];
    for (int f = 0; f < 4; f++) {
        ct_model_params mp = ct_model_params_default();
        mp.weights = fmts[f];
        ct_model *m = NULL;
        CHECKF(ct_model_load(dir, &mp, &m, err, sizeof err) == CT_OK, "%s: %s", fmts[f], err);
        if (!m) continue;
        ct_gen_params g[2];
        for (int i = 0; i < 2; i++) {
            g[i] = ct_gen_params_default();
            g[i].text = i ? "A second stream in the same batch." : "Formats keep their codes.";
            g[i].language = "english";
            g[i].speaker = i ? "vivian" : "ryan";
            g[i].seed = 5 + (uint64_t)i;
            g[i].max_frames = INV_FRAMES + 2;
            g[i].min_new_tokens = INV_FRAMES + 2;
        }
        int32_t a[2][16 * INV_FRAMES], b[16 * INV_FRAMES], bt[2][16 * INV_FRAMES];
        int na0 = solo_codes(m, 1, &g[0], a[0]), na1 = solo_codes(m, 1, &g[1], a[1]);
        int nb = solo_codes(m, 2, &g[0], b);
        CHECKF(na0 == INV_FRAMES && na1 == INV_FRAMES && nb == na0 &&
                   memcmp(a[0], b, sizeof(int32_t) * 16 * INV_FRAMES) == 0,
               "%s: codes differ between 1 and 2 threads", fmts[f]);
        /* the two streams as one batch (2 threads) */
        ct_batch *bh = NULL;
        ct_session *ss[2] = {NULL, NULL};
        ct_session_params sp = ct_session_params_default();
        sp.max_context = 256;
        int ok = ct_batch_create(m, 2, 256, 2, &bh, err, sizeof err) == CT_OK;
        for (int i = 0; i < 2 && ok; i++)
            ok = ct_session_create(m, &sp, &ss[i], err, sizeof err) == CT_OK && ct_session_start(ss[i], &g[i]) == CT_OK;
        CHECKF(ok, "%s: batch setup: %s", fmts[f], err);
        for (int k = 0; k < INV_FRAMES && ok; k++) {
            int32_t codes[2 * 16];
            int got[2] = {0, 0};
            ok = ct_batch_step(bh, ss, 2, codes, got) == CT_OK && got[0] && got[1];
            for (int i = 0; i < 2 && ok; i++) memcpy(bt[i] + 16 * k, codes + 16 * i, sizeof(int32_t) * 16);
        }
        CHECKF(ok && memcmp(bt[0], a[0], sizeof bt[0]) == 0 && memcmp(bt[1], a[1], sizeof bt[1]) == 0,
               "%s: batched codes differ from solo codes", fmts[f]);
        printf("%-6s: 1 vs 2 threads and batch of 2 vs solo: %s\n", fmts[f],
               ok && !memcmp(bt[0], a[0], sizeof bt[0]) ? "identical" : "DIFFERENT");
        for (int i = 0; i < 2; i++) ct_session_free(ss[i]);
        ct_batch_free(bh);
        ct_model_free(m);
    }
}

int main(int argc, char **argv) {
    const char *const *presets = ct_make_model_presets();
    char err[1024];
    for (int i = 0; presets[i]; i++) {
        const char *p = presets[i];
        if (argc > 1 && strcmp(argv[1], p) != 0) continue;
        double t0 = now_s();
        const char *dir = ct_test_make(p, "preset-model", 11);
        CHECKF(dir != NULL, "make %s", p);
        if (!dir) continue;
        double t1 = now_s();
        ct_model *m = NULL;
        ct_status st = ct_model_load(dir, NULL, &m, err, sizeof err);
        CHECKF(st == CT_OK, "%s: %s", p, err);
        if (st == CT_OK) {
            ct_model_info info = ct_model_get_info(m);
            ct_session_params sp = ct_session_params_default();
            sp.max_context = 256;
            ct_session *s = NULL;
            CHECKF(ct_session_create(m, &sp, &s, err, sizeof err) == CT_OK, "%s", err);
            ct_gen_params g = ct_gen_params_default();
            g.text = "Ten frames from every preset.";
            g.language = "english";
            g.max_frames = 10;
            g.min_new_tokens = 10;
            if (strcmp(info.kind, "custom_voice") == 0) g.speaker = "ryan";
            if (strcmp(info.kind, "voice_design") == 0) g.instruct = "A bright young voice.";
            float *xv = NULL;
            if (strcmp(info.kind, "base") == 0) {
                xv = calloc((size_t)info.talker_hidden, sizeof(float));
                for (int k = 0; k < info.talker_hidden; k++) xv[k] = (float)((k % 13) - 6) * 0.05f;
                g.xvector = xv;
                g.xvector_len = info.talker_hidden;
            }
            double t2 = now_s();
            st = ct_session_start(s, &g);
            CHECKF(st == CT_OK, "%s: %s", p, ct_session_errmsg(s));
            int frames = 0, got = 1, inrange = 1;
            int32_t codes[16];
            while (st == CT_OK && got) {
                st = ct_session_next_frame(s, codes, &got);
                if (got) {
                    frames++;
                    for (int k = 0; k < 16; k++) inrange &= codes[k] >= 0 && codes[k] < 2048;
                }
            }
            double t3 = now_s();
            CHECKF(frames == 10, "%s: %d frames", p, frames);
            CHECK(inrange);
            printf("%-18s %-13s H=%d weights %.0f MiB: write %.1f s, load %.2f s, 10 frames %.1f s\n",
                   p, info.kind, info.talker_hidden, (double)info.weight_bytes / 1048576.0, t1 - t0,
                   t2 - t1, t3 - t2);
            free(xv);
            ct_session_free(s);
            ct_model_free(m);
            if (strcmp(p, "0.6b-customvoice") == 0) check_formats(dir);
        }
        rm_model(dir);
    }
    return ct_test_finish();
}
