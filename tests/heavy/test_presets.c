/* Every make-model preset (full-size shapes) loads and decodes 10 frames. Heavy: writes up to
   ~4.3 GB per preset into the build directory and deletes it afterwards. */
#include <stdio.h>
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
        }
        rm_model(dir);
    }
    return ct_test_finish();
}
