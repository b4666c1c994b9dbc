/* `codectalk synth`: text -> frames -> 24 kHz audio on the stream engine (one stream; the
   talker and the codec run side by side or one after the other: --placement; the codec decodes
   as frames arrive; long text is split into utterances by the engine), written as it is made in
   the format -o or --format asks for (WAV PCM16/float, raw s16le, MP3, Ogg Opus, AAC, FLAC). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/speed.h"
#include "audio/wav.h"
#include "cli/args.h"
#include "cli/audio_out.h"
#include "cli/cli_common.h"
#include "cli/cli_profile.h"
#include "codec/codec.h"
#include "codectalk.h"
#include "core/clock.h"
#include "edge/derive.h"

static void progress(const ct_stream_info *in, int rate, double t_start) {
    enum { W = 30 };
    double audio = (double)in->samples / rate, wall = (ct_now_ms() - t_start) / 1e3;
    int n = in->utterances > 0 ? in->utterances : 1, done = in->state >= CT_STREAM_DONE ? n : in->utterance;
    int fill = (int)(W * (double)done / n);
    char bar[W + 1];
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = 0;
    fprintf(stderr, "\r[%s] utterance %d/%d  %.2f s audio  RTF %.2f ", bar, done, n, audio,
            audio > 0 ? wall / audio : 0.0);
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

enum { DRAIN_OK = 0, DRAIN_WRITE = -1, DRAIN_SIGNAL = -2 };

/* Reads the stream to its end into w. DRAIN_OK when every sample was written; DRAIN_WRITE when
   writing failed (*werr = errno) and DRAIN_SIGNAL on SIGINT/SIGTERM; the stream is then
   cancelled. */
static int drain(ct_stream *s, ct_cli_audio_out *w, ct_speed *sp, int tty, int rate, double t_start, int *werr) {
    enum { CAP = 1920 * 8, SCAP = CAP * 4 }; /* 0.25x speed: up to 4 samples out per sample in */
    static float pcm[CAP], stretched[SCAP];
    int finished = 0, first = 1;
    *werr = 0;
    while (!finished) {
        if (ct_cli_signal) {
            ct_stream_cancel(s);
            return DRAIN_SIGNAL;
        }
        size_t n = ct_stream_read(s, pcm, CAP, 200, &finished);
        const float *o = pcm;
        int e = 0;
        if (sp) { /* --speed: the time-stretched audio, drained to the end on the last read */
            size_t got = 0, in = n;
            char m[256];
            do {
                if (ct_speed_run(sp, pcm, in, finished, stretched, SCAP, &got, m, sizeof m) != CT_OK) e = ENOMEM;
                in = 0;
                if (!e && got) e = ct_cli_audio_write(w, stretched, got);
            } while (!e && got == SCAP);
            n = 0;
        }
        errno = 0;
        if (!e && n) e = ct_cli_audio_write(w, o, n);
        if (!e && n && first && fflush(w->f) != 0) e = errno ? errno : EIO;
        if (e) {
            *werr = e;
            ct_stream_cancel(s);
            return ct_cli_signal ? DRAIN_SIGNAL : DRAIN_WRITE;
        }
        if (n || sp) first = 0;
        if (tty) {
            ct_stream_info in = ct_stream_get_info(s);
            progress(&in, rate, t_start);
        }
    }
    return ct_cli_signal ? DRAIN_SIGNAL : DRAIN_OK;
}

int ct_cli_synth(int argc, char **argv) {
    ct_cli_gen a;
    ct_cli_gen_init(&a);
    const char *out = NULL, *schedule = NULL, *tcpus = NULL, *ccpus = NULL, *profile = NULL, *placement = NULL,
               *format = NULL;
    int use_float = 0, max_bytes = 300, windowed = 0, context = 72, codec_threads = 1;
    float speed = 1.0f;
    ct_opt extra[] = {
        {"output", 'o', CT_OPT_STR, &out, "FILE",
         "output file, its format from the extension (.wav .mp3 .opus/.ogg .aac .flac .pcm/.raw; other: WAV), "
         "or '-' for raw s16le on stdout"},
        {"format", 0, CT_OPT_STR, &format, "FMT", "wav | pcm | mp3 | opus | aac | flac (overrides the extension)"},
        {"speed", 0, CT_OPT_FLOAT, &speed, "X", "speaking rate 0.25-4.0 without a pitch change (libsonic; 1 = as generated)"},
        {"float", 0, CT_OPT_FLAG, &use_float, NULL, "write 32-bit float WAV instead of 16-bit PCM"},
        {"utterance-bytes", 0, CT_OPT_INT, &max_bytes, "N",
         "split long text into utterances of about N bytes (default 300; 0 = one utterance)"},
        {"schedule", 0, CT_OPT_STR, &schedule, "SPEC", "chunk schedule: exact (default) | fixed:IC,S | ramp:2,4,8,16,25 | dynamic | adaptive"},
        {"profile", 0, CT_OPT_STR, &profile, "auto|none|FILE",
         "deploy profile (default auto: weight formats, placement, threads, CPUs, context, chunks; "
         "none = plain defaults); every flag given overrides it"},
        {"windowed", 0, CT_OPT_FLAG, &windowed, NULL, "stateless windowed codec decode (the exported form)"},
        {"left-context", 0, CT_OPT_INT, &context, "N", "windowed decode left context in frames (default 72)"},
        {"codec-threads", 0, CT_OPT_INT, &codec_threads, "N", "codec decoder threads (default 1)"},
        {"placement", 0, CT_OPT_STR, &placement, "MODE",
         "overlapped (talker and codec threads side by side) | serial (one pool runs both in turn) | "
         "auto (default: serial on 2 or fewer CPUs)"},
        {"talker-cpus", 0, CT_OPT_STR, &tcpus, "LIST", "pin stage 0 (talker) to CPUs, e.g. 0-2"},
        {"codec-cpus", 0, CT_OPT_STR, &ccpus, "LIST", "pin stage 1 (codec) to CPUs, e.g. 3"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    ct_cli_text tx = {0, 0, 0};
    ct_opt opts[64];
    int n = ct_cli_gen_opts(&a, opts, 48);
    for (int i = 0; extra[i].name; i++) opts[n++] = extra[i];
    n += ct_cli_text_opts(&tx, opts + n, 63 - n);
    opts[n] = (ct_opt){NULL, 0, 0, NULL, NULL, NULL};
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk synth -m DIR [--text TEXT | -f FILE] [options] -o out.wav\n"
                          "Synthesises 24 kHz speech; the codec decodes frames as they are generated.");
    if (r) return r < 0 ? 2 : 0;
    if (ct_cli_gen_check(&a) != 0 || ct_cli_text_check(&tx) != 0) return 2;
    if (!out) {
        fprintf(stderr, "error: -o FILE (or -o - for raw s16le on stdout) is required\n");
        return 2;
    }
    int place = CT_PLACEMENT_AUTO;
    if (placement && ct_placement_parse(placement, &place) != CT_OK) {
        fprintf(stderr, "error: --placement '%s': expected overlapped, serial or auto\n", placement);
        return 2;
    }
    int raw = strcmp(out, "-") == 0, afmt = ct_cli_audio_format(out, format, use_float);
    if (afmt < 0) return 2;
    if (!(speed >= CT_SPEED_MIN && speed <= CT_SPEED_MAX)) {
        fprintf(stderr, "error: --speed %g is outside [0.25, 4.0]\n", (double)speed);
        return 2;
    }
    if (raw && isatty(1)) {
        fprintf(stderr, "error: refusing to write raw audio to a terminal (pipe it: | aplay -f S16_LE -r 24000)\n");
        return 2;
    }
    if (max_bytes != 0 && (max_bytes < 16 || max_bytes > 100000)) {
        fprintf(stderr, "error: --utterance-bytes must be 0 or in [16, 100000]\n");
        return 2;
    }
    int tc[256], cc[256];
    int ntc = cpus_flag("--talker-cpus", tcpus, tc, 256), ncc = cpus_flag("--codec-cpus", ccpus, cc, 256);
    if (ntc < 0 || ncc < 0) return 2;
    ct_model *m = NULL;
    ct_codec *codec = NULL;
    ct_engine *e = NULL;
    ct_stream *s = NULL;
    char *text = NULL;
    FILE *f = NULL;
    float *xv = NULL;
    ct_voice *voice = NULL;
    int rc = 1, tty = isatty(2) && !a.quiet;
    char err[1024], tmp_path[4200] = "";
    double t_load = ct_now_ms();
    ct_cli_audio_out w;
    memset(&w, 0, sizeof w);
    ct_speed *stretch = NULL;
    ct_cli_deploy prof;
    memset(&prof, 0, sizeof prof);
    if (ct_codec_load(a.model, &codec, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    /* the deploy profile (auto unless told), then every flag given over it */
    ct_model_params mp = ct_model_params_default();
    ct_engine_params ep = ct_engine_params_default();
    ct_stream_params sp = ct_stream_params_default();
    if (ct_cli_deploy_resolve(profile, a.model, ct_codec_macs_per_frame(codec), a.quiet, &prof) != 0 ||
        ct_cli_deploy_apply(&prof, &mp, &ep, &sp) != 0)
        goto done;
    ct_cli_gen_over_profile(&a, &mp, &ep, &prof);
    if (!a.quiet) fprintf(stderr, "%s\n", prof.desc);
    m = ct_cli_load_model_p(a.model, &mp);
    if (!m) goto done;
    text = ct_cli_get_text(a.text, a.file, 1);
    if (!text) goto done;
    if (!text[0]) {
        fprintf(stderr, "error: the text is empty\n");
        goto done;
    }
    int vr = ct_cli_voice_get(&a, m, &voice);
    if (vr) {
        rc = vr;
        goto done;
    }
    if (ct_cli_read_xvector(&a, m, &xv) != 0) goto done;
    ep.max_streams = 1; /* one stream: its worst-case KV */
    ep.kv_budget_bytes = 0;
    if (ct_args_given(&codec_threads)) ep.codec_threads = codec_threads;
    if (placement) ep.placement = place;
    if (ntc) {
        ep.talker_cpus = tc;
        ep.n_talker_cpus = ntc;
    }
    if (ncc) {
        ep.codec_cpus = cc;
        ep.n_codec_cpus = ncc;
    }
    if (schedule) sp.schedule = schedule;
    if (ct_args_given(&windowed)) sp.windowed = windowed;
    if (ct_args_given(&context)) sp.context_frames = context;
    if (ct_args_given(&max_bytes)) sp.utterance_bytes = max_bytes;
    ct_cli_text_apply(&tx, &sp);
    if (ct_engine_create(m, codec, &ep, &e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    f = ct_cli_open_audio_out(out, raw, tmp_path, sizeof tmp_path);
    if (!f) goto done;
    int rate = ct_codec_sample_rate(codec);
    int be = ct_cli_audio_begin(&w, f, afmt, rate, use_float);
    if (be) {
        if (w.msg[0]) fprintf(stderr, "error: %s\n", w.msg);
        else rc = ct_cli_write_error(f, raw ? "stdout" : out, be, 0);
        goto done;
    }
    ct_gen_params g;
    ct_cli_gen_params(&a, &g, text, xv, m);
    ct_cli_voice_apply(&a, voice, &g);
    double t_start = ct_now_ms();
    t_load = t_start - t_load;
    if (ct_engine_submit(e, &g, &sp, &s, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (speed != 1.0f && ct_speed_create(rate, speed, &stretch, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    int werr = 0, dr = drain(s, &w, stretch, tty, rate, t_start, &werr);
    if (dr == DRAIN_SIGNAL) {
        fprintf(stderr, "%sinterrupted: %s\n", tty ? "\n" : "",
                tmp_path[0] ? "no output written" : "output is incomplete");
        goto done;
    }
    if (dr == DRAIN_WRITE) {
        rc = ct_cli_write_error(f, raw ? "stdout" : out, werr, tty);
        goto done;
    }
    ct_stream_info in = ct_stream_get_info(s);
    if (in.state == CT_STREAM_FAILED) {
        fprintf(stderr, "%serror: utterance %d: %s\n", tty ? "\n" : "", in.utterance + 1, ct_stream_errmsg(s));
        goto done;
    }
    int fin = ct_cli_audio_end(&w);
    if (!fin && f != stdout) {
        FILE *fc = f;
        f = NULL;
        if (fclose(fc) != 0) fin = errno ? errno : EIO;
    }
    if (fin) {
        rc = ct_cli_write_error(f, raw ? "stdout" : out, fin, tty);
        goto done;
    }
    if (tmp_path[0] && rename(tmp_path, out) != 0) {
        fprintf(stderr, "%serror: cannot rename '%s' to '%s': %s\n", tty ? "\n" : "", tmp_path, out, strerror(errno));
        goto done;
    }
    tmp_path[0] = 0; /* renamed: nothing to clean up */
    double wall = (ct_now_ms() - t_start) / 1e3, audio = (double)in.samples / rate;
    if (tty) fputc('\n', stderr);
    char pan[64] = ""; /* the weight panels' memory, where the profile packed them */
    if (ct_model_get_info(m).packed_bytes)
        snprintf(pan, sizeof pan, ", %.1f MiB of weight panels", (double)ct_model_get_info(m).packed_bytes / 1048576.0);
    if (!a.quiet)
        fprintf(stderr, "%s: %.2f s of audio in %.2f s (RTF %.3f), time to first audio %.3f s, "
                "%d utterance(s), last stop: %s (load %.2f s, %s placement, weights %s/%s, %d prefill "
                "pass(es), %d of %d prompt positions kept%s)\n",
                raw ? "stdout" : out, audio, wall, audio > 0 ? wall / audio : 0.0, in.ttfa_ms / 1e3,
                in.utterances, ct_stop_reason_str(in.stop), t_load / 1e3,
                ct_placement_str(ct_engine_get_limits(e).placement), ct_model_get_info(m).talker_weights,
                ct_model_get_info(m).predictor_weights, in.prefill_passes, in.prompt_reused, in.prompt_len, pan);
    rc = 0;
done:
    if (f && f != stdout) fclose(f);
    if (tmp_path[0]) remove(tmp_path); /* never leave a partial WAV behind */
    ct_stream_release(s);
    ct_engine_free(e);
    free(text);
    free(xv);
    ct_voice_free(voice);
    ct_codec_free(codec);
    ct_model_free(m);
    ct_cli_deploy_free(&prof);
    ct_cli_audio_free(&w);
    ct_speed_free(stretch);
    return ct_cli_exit_signal(rc); /* cleaned up: now die of the signal, as the caller expects */
}
