/* `codectalk synth`: text -> frames -> 24 kHz audio through the streaming pipeline (talker and
   codec on their own threads, or one after the other on one pool: --scheduling; the codec
   decodes as frames arrive), written as WAV (PCM16 or float) or raw s16le to stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/wav.h"
#include "cli/args.h"
#include "cli/cli_common.h"
#include "cli/cli_profile.h"
#include "codectalk.h"
#include "core/clock.h"
#include "edge/derive.h"
#include "text/sentences.h"

typedef struct {
    ct_wav_writer *w;
    int failed;
    long samples;
    double t_start, ttfa;
    int tty, utt, n_utt, rate;
} sink_state;

static void progress(const sink_state *st) {
    enum { W = 30 };
    double audio = (double)st->samples / st->rate, wall = (ct_now_ms() - st->t_start) / 1e3;
    int fill = (int)(W * (double)st->utt / (st->n_utt ? st->n_utt : 1));
    char bar[W + 1];
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = 0;
    fprintf(stderr, "\r[%s] utterance %d/%d  %.2f s audio  RTF %.2f ", bar, st->utt, st->n_utt, audio,
            audio > 0 ? wall / audio : 0.0);
}

static int sink(void *ud, const float *pcm, int n, int index) {
    sink_state *st = ud;
    (void)index;
    if (ct_wav_write(st->w, pcm, (size_t)n) != CT_OK) {
        st->failed = 1;
        return 1;
    }
    if (st->ttfa < 0) {
        fflush(st->w->f);
        st->ttfa = ct_now_ms() - st->t_start;
    }
    st->samples += n;
    if (st->tty) progress(st);
    return 0;
}

/* Parses a CPU list flag ("0-2,5") into cpus[cap]; returns the count or -1 (message printed). */
static int cpus_flag(const char *flag, const char *v, int *cpus, int cap) {
    if (!v) return 0;
    int n = 0;
    char err[256];
    if (ct_cpu_range_parse(v, cpus, cap, &n, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s: %s\n", flag, err);
        return -1;
    }
    return n;
}

int ct_cli_synth(int argc, char **argv) {
    ct_cli_gen a;
    ct_cli_gen_init(&a);
    const char *out = NULL, *schedule = NULL, *tcpus = NULL, *ccpus = NULL, *profile = NULL, *scheduling = NULL;
    int use_float = 0, max_bytes = 300, windowed = 0, context = 72, codec_threads = 1;
    ct_opt extra[] = {
        {"output", 'o', CT_OPT_STR, &out, "FILE", "output WAV file, or '-' for raw s16le on stdout"},
        {"float", 0, CT_OPT_FLAG, &use_float, NULL, "write 32-bit float WAV instead of 16-bit PCM"},
        {"utterance-bytes", 0, CT_OPT_INT, &max_bytes, "N", "split long text into utterances of about N bytes (default 300)"},
        {"schedule", 0, CT_OPT_STR, &schedule, "SPEC", "chunk schedule: exact (default) | fixed:IC,S | ramp:2,4,8,16,25 | dynamic | adaptive"},
        {"profile", 0, CT_OPT_STR, &profile, "auto|FILE", "deploy profile: threads, CPU sets, context, schedule (flags override it)"},
        {"windowed", 0, CT_OPT_FLAG, &windowed, NULL, "stateless windowed codec decode (the exported form)"},
        {"context", 0, CT_OPT_INT, &context, "N", "windowed decode left context in frames (default 72)"},
        {"codec-threads", 0, CT_OPT_INT, &codec_threads, "N", "codec decoder threads (default 1)"},
        {"scheduling", 0, CT_OPT_STR, &scheduling, "MODE",
         "overlapped (talker and codec threads side by side) | serial (one pool runs both in turn) | "
         "auto (default: serial on 2 or fewer CPUs)"},
        {"talker-cpus", 0, CT_OPT_STR, &tcpus, "LIST", "pin stage 0 (talker) to CPUs, e.g. 0-2"},
        {"codec-cpus", 0, CT_OPT_STR, &ccpus, "LIST", "pin stage 1 (codec) to CPUs, e.g. 3"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    ct_opt opts[64];
    int n = ct_cli_gen_opts(&a, opts, 48);
    for (int i = 0; extra[i].name; i++) opts[n++] = extra[i];
    opts[n] = (ct_opt){NULL, 0, 0, NULL, NULL, NULL};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk synth -m DIR [--text TEXT | -f FILE] [options] -o out.wav\n"
                          "Synthesises 24 kHz speech; the codec decodes frames as they are generated.");
    if (r) return r < 0 ? 2 : 0;
    if (!out) {
        fprintf(stderr, "error: -o FILE (or -o - for raw s16le on stdout) is required\n");
        return 2;
    }
    int sched_mode = CT_SCHEDULING_AUTO;
    if (scheduling && ct_scheduling_parse(scheduling, &sched_mode) != CT_OK) {
        fprintf(stderr, "error: --scheduling '%s': expected overlapped, serial or auto\n", scheduling);
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
    int tc[256], cc[256];
    int ntc = cpus_flag("--talker-cpus", tcpus, tc, 256), ncc = cpus_flag("--codec-cpus", ccpus, cc, 256);
    if (ntc < 0 || ncc < 0) return 2;
    ct_model *m = NULL;
    ct_codec *codec = NULL;
    ct_synth *sy = NULL;
    char *text = NULL;
    FILE *f = NULL;
    ct_span *spans = NULL;
    float *xv = NULL;
    int rc = 1;
    char err[1024], tmp_path[4200] = "";
    double t_load = ct_now_ms();
    m = ct_cli_load_model_w(a.model, a.tok, a.f32, a.weights);
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
    ct_synth_params sp = ct_synth_params_default();
    ct_cli_profile_map prof;
    if (profile) {
        if (ct_cli_apply_profile(profile, a.model, &sp, &prof) != 0) goto done;
        if (!a.quiet) fprintf(stderr, "%s\n", prof.desc);
    }
    if (!profile || a.ctx != 2048) sp.max_context = a.ctx;
    if (!profile || a.threads) sp.talker_threads = a.threads;
    if (!profile || codec_threads != 1) sp.codec_threads = codec_threads;
    if (schedule) sp.schedule = schedule;
    sp.windowed = windowed;
    if (!profile || context != 72) sp.context_frames = context;
    sp.scheduling = sched_mode;
    if (!sp.talker_threads) { /* default: the talker gets all cores but one, the codec the last;
                                 serial: one pool of all cores */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        sp.talker_threads = sched_mode == CT_SCHEDULING_SERIAL ? (ncpu > 0 ? (int)ncpu : 1) : ncpu > 1 ? (int)ncpu - 1 : 1;
    }
    if (ntc) {
        sp.talker_cpus = tc;
        sp.n_talker_cpus = ntc;
    }
    if (ncc) {
        sp.codec_cpus = cc;
        sp.n_codec_cpus = ncc;
    }
    if (ct_synth_create(m, codec, &sp, &sy, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (!raw) snprintf(tmp_path, sizeof tmp_path, "%s.partial", out);
    f = raw ? stdout : fopen(tmp_path, "wb");
    if (!f) {
        fprintf(stderr, "error: cannot open '%s' for writing\n", raw ? "stdout" : tmp_path);
        tmp_path[0] = 0;
        goto done;
    }
    ct_wav_writer w;
    int rate = ct_codec_sample_rate(codec);
    if (ct_wav_begin(&w, f, rate, raw ? CT_WAV_RAW_S16LE : use_float ? CT_WAV_FLOAT32 : CT_WAV_PCM16) !=
        CT_OK) {
        fprintf(stderr, "error: cannot write '%s'\n", out);
        goto done;
    }
    sink_state st = {&w, 0, 0, ct_now_ms(), -1, isatty(2) && !a.quiet, 0, (int)nu, rate};
    t_load = st.t_start - t_load;
    int stops[5] = {0};
    char *utt = malloc(len + 1);
    if (!utt) goto done;
    for (size_t u = 0; u < nu; u++) {
        memcpy(utt, text + spans[u].off, spans[u].len);
        utt[spans[u].len] = 0;
        ct_gen_params g;
        ct_cli_gen_params(&a, &g, utt, xv, m);
        g.seed = a.seed + u; /* each utterance its own reproducible stream */
        st.utt = (int)u;
        ct_status rs = ct_synth_run(sy, &g, sink, &st);
        if (rs != CT_OK) {
            if (st.failed)
                fprintf(stderr, "%serror: writing audio failed (disk full or pipe closed)\n", st.tty ? "\n" : "");
            else
                fprintf(stderr, "%serror: utterance %zu: %s\n", st.tty ? "\n" : "", u + 1, ct_synth_errmsg(sy));
            free(utt);
            goto done;
        }
        stops[ct_synth_get_stats(sy).stop]++;
    }
    free(utt);
    if (ct_wav_end(&w) != CT_OK || (!raw && (fclose(f) != 0 || (f = NULL, rename(tmp_path, out) != 0)))) {
        fprintf(stderr, "%serror: finishing '%s' failed (disk full?)\n", st.tty ? "\n" : "", out);
        goto done;
    }
    tmp_path[0] = 0; /* renamed: nothing to clean up */
    double wall = (ct_now_ms() - st.t_start) / 1e3, audio = (double)st.samples / rate;
    if (st.tty) {
        st.utt = (int)nu;
        progress(&st);
        fputc('\n', stderr);
    }
    if (!a.quiet)
        fprintf(stderr, "%s: %.2f s of audio in %.2f s (RTF %.3f), time to first audio %.3f s, "
                "%zu utterance(s), stops: eos %d, max_frames %d, budget %d (load %.2f s, %s scheduling)\n",
                raw ? "stdout" : out, audio, wall, audio > 0 ? wall / audio : 0.0, st.ttfa / 1e3, nu,
                stops[CT_STOP_EOS], stops[CT_STOP_MAX_FRAMES], stops[CT_STOP_BUDGET], t_load / 1e3,
                ct_scheduling_str(ct_synth_scheduling(sy)));
    rc = 0;
done:
    if (f && f != stdout) fclose(f);
    if (tmp_path[0]) remove(tmp_path); /* never leave a partial WAV behind */
    free(spans);
    free(text);
    free(xv);
    ct_synth_free(sy);
    ct_codec_free(codec);
    ct_model_free(m);
    return rc;
}
