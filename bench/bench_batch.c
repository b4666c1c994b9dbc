/* Batched decode throughput: frames/s of ct_batch_step for B = 1, 2, 4 streams (talker + code
   predictor, no codec), so the aggregate gain of shared weight passes is measured side by side.
   Build: gcc -O2 -Iinclude -Isrc bench/bench_batch.c build/libcodectalk.a $(pkg-config --libs
   jansson libpcre2-8 libutf8proc yaml-0.1 libmicrohttpd) -lpthread -lm -ldl -o bench_batch
   Run:   ./bench_batch MODEL_DIR [threads] [frames] [weights: bf16|int8|int4|mixed] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codectalk.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [threads] [frames] [weights]\n", argv[0]);
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, frames = argc > 3 ? atoi(argv[3]) : 12;
    char err[1024];
    ct_model *m = NULL;
    ct_model_params mp = ct_model_params_default();
    if (argc > 4) mp.weights = argv[4];
    if (ct_model_load(argv[1], &mp, &m, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    double base = 0;
    printf("weights %s, %d threads, %d frames per measurement\n", argc > 4 ? argv[4] : "bf16", threads, frames);
    printf("| streams | ms per step | aggregate frames/s | vs 1 stream |\n|---|---|---|---|\n");
    for (int B = 1; B <= 4; B *= 2) {
        ct_batch *b = NULL;
        ct_session *ss[4] = {0};
        ct_session_params sp = ct_session_params_default();
        sp.max_context = 256;
        if (ct_batch_create(m, B, 256, threads, &b, err, sizeof err) != CT_OK) return 1;
        for (int i = 0; i < B; i++) {
            if (ct_session_create(m, &sp, &ss[i], err, sizeof err) != CT_OK) return 1;
            ct_gen_params g = ct_gen_params_default();
            g.text = "Batched decode throughput measurement sentence.";
            if (ct_model_get_info(m).n_speakers) g.speaker = ct_model_speaker(m, i);
            g.seed = (uint64_t)i;
            g.max_frames = frames + 2;
            g.min_new_tokens = frames + 2;
            ct_session_start(ss[i], &g);
        }
        int32_t codes[4 * 16];
        int got[4];
        ct_batch_step(b, ss, B, codes, got); /* warm-up step */
        double t = now_s();
        for (int f = 0; f < frames; f++) ct_batch_step(b, ss, B, codes, got);
        double ms = (now_s() - t) * 1e3 / frames, fps = B * 1e3 / ms;
        if (B == 1) base = fps;
        printf("| %d | %.1f | %.2f | %.2fx |\n", B, ms, fps, fps / base);
        for (int i = 0; i < B; i++) ct_session_free(ss[i]);
        ct_batch_free(b);
    }
    ct_model_free(m);
    return 0;
}
