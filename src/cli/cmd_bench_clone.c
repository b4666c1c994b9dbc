/* `codectalk bench clone`: what cloning costs (docs/BENCH.md "Cloning"): the time to encode a
   reference clip, speaker encoder (x-vector) and speech-tokenizer encoder (reference codes)
   apart, and the time to first audio of a plain, an x-vector-only and an ICL request on the
   stream engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli_common.h"
#include "core/clock.h"
#include "serve/voices.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[n] (sorts v). */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int ct_cli_bench_clone(int argc, char **argv) {
    const char *model = NULL, *clip = NULL, *json_out = NULL;
    const char *ref_text = "This is the transcript of the reference clip, read at an even pace from start to end.";
    const char *text = "Hello! This sentence is spoken in the cloned voice.";
    int repeat = 3, frames = 12;
    ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "a Base model directory"},
        {"ref-audio", 0, CT_OPT_STR, &clip, "CLIP", "the reference clip (e.g. 10 s; WAV, FLAC, Ogg, MP3)"},
        {"ref-text", 0, CT_OPT_STR, &ref_text, "TEXT", "its transcript for the ICL request (default: a fixed sentence)"},
        {"text", 't', CT_OPT_STR, &text, "TEXT", "the text of the measured requests"},
        {"repeat", 'n', CT_OPT_INT, &repeat, "N", "runs of each measurement; the median is reported (default 3)"},
        {"frames", 0, CT_OPT_INT, &frames, "N", "frames per measured request (default 12)"},
        {"json", 0, CT_OPT_STR, &json_out, "FILE", "also write the figures as JSON"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk bench clone -m DIR --ref-audio CLIP [--repeat N] [--json FILE]\n"
                          "Times the encoding of a reference clip (speaker encoder and speech-tokenizer encoder\n"
                          "apart) and the time to first audio of a plain, an x-vector-only and an ICL request.");
    if (r) return r < 0 ? 2 : 0;
    if (!model || !clip) {
        fprintf(stderr, "error: bench clone needs -m DIR and --ref-audio CLIP\n");
        return 2;
    }
    if (repeat < 1 || repeat > 100 || frames < 1 || frames > 1000) {
        fprintf(stderr, "error: --repeat must be in [1, 100] and --frames in [1, 1000]\n");
        return 2;
    }
    char err[1024];
    ct_ref_audio a;
    memset(&a, 0, sizeof a);
    if (ct_ref_audio_load_file(clip, &a, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    ct_model *m = ct_cli_load_model(model, NULL, 0);
    ct_codec *codec = NULL;
    ct_speech_encoder *enc = NULL;
    ct_engine *e = NULL;
    ct_voice *v = NULL;
    int rc = 1;
    double *t_spk = calloc((size_t)repeat, sizeof(double)), *t_enc = calloc((size_t)repeat, sizeof(double));
    double *t_ttfa[4], pre_ms[4] = {0, 0, 0, 0};
    int plen[4] = {0, 0, 0, 0}, kept[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; k++) t_ttfa[k] = calloc((size_t)repeat, sizeof(double));
    int H = m ? ct_model_get_info(m).talker_hidden : 0, G = m ? ct_model_get_info(m).n_groups : 0;
    int cap = (int)((a.n + 1919) / 1920), nf = 0;
    float *xv = malloc(sizeof(float) * (size_t)(H ? H : 1));
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)cap * (size_t)(G ? G : 1));
    if (!m || !t_spk || !t_enc || !t_ttfa[0] || !t_ttfa[1] || !t_ttfa[2] || !t_ttfa[3] || !xv || !codes) goto done;
    if (ct_speech_encoder_load(model, &enc, err, sizeof err) != CT_OK ||
        ct_codec_load(model, &codec, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    for (int i = 0; i < repeat; i++) { /* the two encoders, each on the whole clip */
        double t0 = ct_now_ms();
        if (ct_model_speaker_embed(m, a.pcm, a.n, xv, H, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            goto done;
        }
        double t1 = ct_now_ms();
        if (ct_speech_encode(enc, a.pcm, a.n, codes, cap, &nf, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            goto done;
        }
        t_spk[i] = t1 - t0;
        t_enc[i] = ct_now_ms() - t1;
    }
    if (ct_voice_from_parts(m, xv, H, codes, nf, ref_text, &v, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    ct_engine_params ep = ct_engine_params_default();
    ep.max_streams = 1;
    if (ct_engine_create(m, codec, &ep, &e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    /* ICL twice: the first request of a voice on an engine (its decoder primed with the
       reference frames: a fresh engine each run) and a later one (the kept state) */
    static const char *const KIND[4] = {"plain", "x-vector-only", "ICL, first request of the voice",
                                        "ICL, voice used before"};
    ct_stream_params sp = ct_stream_params_default();
    for (int i = 0; i < repeat + 1; i++) /* a warm-up round first (not counted) */
        for (int k = 0; k < 4; k++) {
            ct_engine *run = e;
            if (k == 2 && ct_engine_create(m, codec, &ep, &run, err, sizeof err) != CT_OK) {
                fprintf(stderr, "error: %s\n", err);
                goto done;
            }
            ct_gen_params g = ct_gen_params_default();
            g.text = text;
            g.language = "english";
            g.seed = 1;
            g.max_frames = g.min_new_tokens = frames;
            if (k) ct_voice_apply(v, &g, k == 1);
            ct_chunk_rec *ch = NULL;
            int nc = 0;
            ct_stream_info si;
            int bad = ct_cli_run_stream(run, &g, &sp, KIND[k], &ch, &nc, &si) != 0;
            if (run != e) ct_engine_free(run);
            if (bad) goto done;
            free(ch);
            if (i) t_ttfa[k][i - 1] = si.ttfa_ms;
            if (i == repeat) /* the last run's */
                pre_ms[k] = si.prefill_ms, plen[k] = si.prompt_len, kept[k] = si.prompt_reused;
        }
    double sec = (double)a.n / CT_REF_RATE, ms_spk = median(t_spk, repeat), ms_enc = median(t_enc, repeat);
    double ttfa[4];
    for (int k = 0; k < 4; k++) ttfa[k] = median(t_ttfa[k], repeat);
    printf("bench clone: %s, reference %.2f s (%d frames), median of %d\n", model, sec, nf, repeat);
    printf("| stage | ms | x real time |\n|---|---|---|\n");
    printf("| speaker encoder (x-vector) | %.1f | %.3f |\n", ms_spk, ms_spk / 1e3 / sec);
    printf("| speech-tokenizer encoder (reference codes) | %.1f | %.3f |\n", ms_enc, ms_enc / 1e3 / sec);
    printf("| both (voice create, ICL) | %.1f | %.3f |\n\n", ms_spk + ms_enc, (ms_spk + ms_enc) / 1e3 / sec);
    /* kept: the positions the slot's previous prefill left or the prompt cache held (prompt
       reuse), not run */
    printf("| request | prompt positions | kept | prefill ms (last run) | TTFA ms |\n|---|---|---|---|---|\n");
    for (int k = 0; k < 4; k++)
        printf("| %s | %d | %d | %.1f | %.1f |\n", KIND[k], plen[k], kept[k], pre_ms[k], ttfa[k]);
    if (json_out) {
        FILE *f = fopen(json_out, "w");
        if (!f) {
            fprintf(stderr, "error: cannot write '%s'\n", json_out);
            goto done;
        }
        fprintf(f, "{\"ref_seconds\": %.3f, \"ref_frames\": %d, \"repeat\": %d, \"speaker_encoder_ms\": %.3f, "
                   "\"speech_encoder_ms\": %.3f, \"ttfa_ms\": {\"plain\": %.3f, \"x_vector_only\": %.3f, \"icl\": %.3f, "
                   "\"icl_voice_used_before\": %.3f}, \"prompt_len\": {\"plain\": %d, \"x_vector_only\": %d, "
                   "\"icl\": %d}, \"prompt_reused\": {\"plain\": %d, \"x_vector_only\": %d, \"icl\": %d, "
                   "\"icl_voice_used_before\": %d}}\n",
                sec, nf, repeat, ms_spk, ms_enc, ttfa[0], ttfa[1], ttfa[2], ttfa[3], plen[0], plen[1], plen[2],
                kept[0], kept[1], kept[2], kept[3]);
        if (fclose(f) != 0) {
            fprintf(stderr, "error: writing '%s' failed\n", json_out);
            goto done;
        }
    }
    rc = 0;
done:
    ct_engine_free(e);
    ct_voice_free(v);
    ct_speech_encoder_free(enc);
    ct_codec_free(codec);
    ct_model_free(m);
    ct_ref_audio_free(&a);
    free(xv);
    free(codes);
    free(t_spk);
    free(t_enc);
    for (int k = 0; k < 4; k++) free(t_ttfa[k]);
    return rc;
}
