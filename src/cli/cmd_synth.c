/* `codectalk synth`: text -> frames -> 24 kHz audio, decoded frame by frame as the talker
   produces them, written as WAV (PCM16 or float) or raw s16le to stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio/wav.h"
#include "cli/args.h"
#include "cli/cli_common.h"
#include "codec/codec.h"
#include "codectalk.h"
#include "text/sentences.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(double audio_s, double wall, int utt, int n_utt) {
    int width = 30, fill = 0;
    double rtf = audio_s > 0 ? wall / audio_s : 0;
    fill = (int)(width * (double)utt / (n_utt ? n_utt : 1));
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] utterance %d/%d  %.2f s audio  RTF %.2f ", bar, utt, n_utt, audio_s, rtf);
}

int ct_cli_synth(int argc, char **argv) {
    ct_cli_gen a;
    ct_cli_gen_init(&a);
    const char *out = NULL;
    int use_float = 0, max_bytes = 300;
    ct_opt extra[] = {
        {"output", 'o', CT_OPT_STR, &out, "FILE", "output WAV file, or '-' for raw s16le on stdout"},
        {"float", 0, CT_OPT_FLAG, &use_float, NULL, "write 32-bit float WAV instead of 16-bit PCM"},
        {"utterance-bytes", 0, CT_OPT_INT, &max_bytes, "N", "split long text into utterances of about N bytes (default 300)"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    ct_opt opts[64];
    int n = ct_cli_gen_opts(&a, opts, 48);
    for (int i = 0; extra[i].name; i++) opts[n++] = extra[i];
    opts[n] = extra[3];
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk synth -m DIR [--text TEXT | -f FILE] [options] -o out.wav\n"
                          "Synthesises 24 kHz speech; the codec decodes each frame as it is generated.");
    if (r) return r < 0 ? 2 : 0;
    if (!out) {
        fprintf(stderr, "error: -o FILE (or -o - for raw s16le on stdout) is required\n");
        return 2;
    }
    int raw = strcmp(out, "-") == 0;
    if (raw && isatty(1)) {
        fprintf(stderr, "error: refusing to write raw audio to a terminal (pipe it: | aplay -f S16_LE -r 24000)\n");
        return 2;
    }
    if (max_bytes < 16 || max_bytes > 100000) {
        fprintf(stderr, "error: --utterance-bytes must be in [16, 100000]\n");
        return 2;
    }
    ct_model *m = NULL;
    ct_codec *codec = NULL;
    ct_session *s = NULL;
    ct_codec_stream *cs = NULL;
    char *text = NULL;
    FILE *f = NULL;
    ct_span *spans = NULL;
    float *pcm = NULL, *xv = NULL;
    int rc = 1;
    char err[1024];
    double t0 = now_s();
    m = ct_cli_load_model(a.model, a.tok, a.f32);
    if (!m) goto done;
    if (ct_codec_load(a.model, &codec, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    text = ct_cli_get_text(a.text, a.file, 1);
    if (!text) goto done;
    if (!text[0]) {
        fprintf(stderr, "error: the text is empty\n");
        goto done;
    }
    if (ct_cli_read_xvector(&a, m, &xv) != 0) goto done;
    size_t len = strlen(text);
    size_t ns = ct_split_sentences(text, len, (size_t)max_bytes, NULL, 0);
    spans = malloc(sizeof(ct_span) * (ns ? ns : 1));
    if (!spans) goto done;
    ns = ct_split_sentences(text, len, (size_t)max_bytes, spans, ns);
    /* merge neighbouring sentences up to max_bytes so prosody spans several of them */
    size_t nu = 0;
    for (size_t i = 0; i < ns; i++) {
        if (nu && spans[i].off + spans[i].len - spans[nu - 1].off <= (size_t)max_bytes)
            spans[nu - 1].len = spans[i].off + spans[i].len - spans[nu - 1].off;
        else
            spans[nu++] = spans[i];
    }
    ct_session_params sp = ct_session_params_default();
    sp.max_context = a.ctx;
    sp.n_threads = a.threads;
    if (ct_session_create(m, &sp, &s, err, sizeof err) != CT_OK ||
        ct_codec_stream_create(codec, 1, &cs, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    const int spf = ct_codec_samples_per_frame(codec), rate = ct_codec_sample_rate(codec);
    pcm = malloc(sizeof(float) * (size_t)spf);
    if (!pcm) goto done;
    f = raw ? stdout : fopen(out, "wb");
    if (!f) {
        fprintf(stderr, "error: cannot open '%s' for writing\n", out);
        goto done;
    }
    ct_wav_writer w;
    if (ct_wav_begin(&w, f, rate, raw ? CT_WAV_RAW_S16LE : use_float ? CT_WAV_FLOAT32 : CT_WAV_PCM16) !=
        CT_OK) {
        fprintf(stderr, "error: cannot write '%s'\n", out);
        goto done;
    }
    double t_start = now_s(), ttfa = -1;
    long frames = 0;
    int tty = isatty(2) && !a.quiet;
    int stops[5] = {0};
    char *utt = malloc((size_t)max_bytes * 2 + len + 1);
    if (!utt) goto done;
    for (size_t u = 0; u < nu; u++) {
        memcpy(utt, text + spans[u].off, spans[u].len);
        utt[spans[u].len] = 0;
        ct_gen_params g;
        ct_cli_gen_params(&a, &g, utt, xv, m);
        g.seed = a.seed + u; /* each utterance its own reproducible stream */
        if (ct_session_start(s, &g) != CT_OK) {
            fprintf(stderr, "%serror: utterance %zu: %s\n", tty ? "\n" : "", u + 1, ct_session_errmsg(s));
            free(utt);
            goto done;
        }
        ct_codec_stream_reset(cs);
        for (;;) {
            int32_t codes[64];
            int got = 0;
            if (ct_session_next_frame(s, codes, &got) != CT_OK) {
                fprintf(stderr, "%serror: %s\n", tty ? "\n" : "", ct_session_errmsg(s));
                free(utt);
                goto done;
            }
            if (!got) break;
            if (ct_codec_stream_push(cs, codes, 1, pcm, err, sizeof err) != CT_OK) {
                fprintf(stderr, "%serror: codec: %s\n", tty ? "\n" : "", err);
                free(utt);
                goto done;
            }
            if (ct_wav_write(&w, pcm, (size_t)spf) != CT_OK) {
                fprintf(stderr, "%serror: writing audio failed (disk full or pipe closed)\n", tty ? "\n" : "");
                free(utt);
                goto done;
            }
            if (ttfa < 0) {
                fflush(f);
                ttfa = now_s() - t_start;
            }
            frames++;
            if (tty && frames % 5 == 0) progress(frames * (double)spf / rate, now_s() - t_start, (int)u, (int)nu);
        }
        stops[ct_session_stop_reason(s)]++;
    }
    free(utt);
    if (ct_wav_end(&w) != CT_OK) {
        fprintf(stderr, "%serror: finishing '%s' failed\n", tty ? "\n" : "", out);
        goto done;
    }
    double wall = now_s() - t_start, audio = frames * (double)spf / rate;
    if (tty) {
        progress(audio, wall, (int)nu, (int)nu);
        fputc('\n', stderr);
    }
    if (!a.quiet)
        fprintf(stderr, "%s: %.2f s of audio in %.2f s (RTF %.3f), time to first audio %.3f s, "
                "%zu utterance(s), %ld frames, stops: eos %d, max_frames %d, budget %d (load %.2f s)\n",
                raw ? "stdout" : out, audio, wall, audio > 0 ? wall / audio : 0.0, ttfa, nu, frames,
                stops[CT_STOP_EOS], stops[CT_STOP_MAX_FRAMES], stops[CT_STOP_BUDGET], t_start - t0);
    rc = 0;
done:
    if (f && f != stdout) fclose(f);
    free(pcm);
    free(spans);
    free(text);
    free(xv);
    ct_codec_stream_free(cs);
    ct_session_free(s);
    ct_codec_free(codec);
    ct_model_free(m);
    return rc;
}
