/* `codectalk client`: asks a codectalk server for a codes stream (response_format "codes",
   docs/CODES_WIRE.md) and decodes the frames locally as they arrive: with the exact stateful
   decoder of the codec in -m DIR (native), or as the exported codec programs of a manifest
   compute them (windowed: the seed's ramp, one window per chunk, left context zero-padded while
   history is short, on our windowed decoder); writes WAV (PCM16) or raw s16le like synth and
   reports time to first audio and the client decode time per chunk. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "audio/wav.h"
#include "cli/args.h"
#include "cli/cli_common.h"
#include "codectalk.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "codec/codec.h"
#include "export/codec_manifest.h"
#include "serve/client.h"
#include "serve/codes_wire.h"

#define MAX_PUSH 64 /* frames per codec push */

/* Generation flags of the shared table that a server request cannot carry: removed before
   parsing (so they are refused as unknown options). */
static const char *const NOT_SENT[] = {"xvector",    "sub-temperature", "sub-top-k", "sub-top-p", "min-new-tokens",
                                       "max-frames", "threads",         "context",   "f32",       "weights",
                                       "tokenizer",  "voice",           "x-vector-only",
                                       "ref-audio",  "ref-text"};

typedef struct {
    ct_http_resp *resp; /* the response being read (status and headers are set before the body) */
    ct_codes_reader *rd;
    const ct_codec *codec;
    ct_codec_stream *cs;
    const char *codec_id; /* ours */
    ct_wav_writer *w;
    int checked;  /* the status and content type were looked at */
    int is_codes; /* 200 with the codes media type */
    int G, spf;
    const ct_codec_manifest *man; /* windowed: the programs' context and ramp (NULL: native) */
    int32_t *hist;                /* windowed: the last n_hist frames of the utterance, zeros before it */
    int n_hist, ramp_i;           /* [n_hist][G]; the next chunk's ramp index */
    int32_t *pend;                /* frames received, not yet decoded: [n_pend][G] */
    int n_pend, cap_pend;
    float *pcm; /* [max(MAX_PUSH, largest program) * spf] */
    double t0, ttfa_ms;
    uint64_t samples;
    int chunks;
    double dec_sum, dec_max;
    FILE *timeline;
    int werr; /* errno of a failed write */
    char err[640];
} client_ctx;

static int on_header(void *ud, const ct_codes_header *h, char *msg, size_t cap) {
    client_ctx *c = ud;
    if (strcmp(h->codec_id, c->codec_id) != 0) {
        snprintf(msg, cap, "the server's codec '%s' is not the codec of -m (%s); decode with that model's codec",
                 h->codec_id[0] ? h->codec_id : "(none)", c->codec_id);
        return 1;
    }
    if (h->sample_rate != ct_codec_sample_rate(c->codec) || h->samples_per_frame != c->spf || h->n_groups != c->G) {
        snprintf(msg, cap,
                 "the stream (%d Hz, %d samples and %d codes per frame) does not fit the codec (%d Hz, %d, %d)",
                 h->sample_rate, h->samples_per_frame, h->n_groups, ct_codec_sample_rate(c->codec), c->spf, c->G);
        return 1;
    }
    return 0;
}

static int on_frame(void *ud, uint32_t index, const int32_t *codes, int n, char *msg, size_t cap) {
    client_ctx *c = ud;
    (void)index;
    if (c->n_pend == c->cap_pend) {
        int nc = c->cap_pend ? 2 * c->cap_pend : 64;
        int32_t *np = realloc(c->pend, sizeof(int32_t) * (size_t)nc * (size_t)n);
        if (!np) {
            snprintf(msg, cap, "out of memory");
            return 1;
        }
        c->pend = np;
        c->cap_pend = nc;
    }
    memcpy(c->pend + (size_t)c->n_pend * (size_t)n, codes, sizeof(int32_t) * (size_t)n);
    c->n_pend++;
    return 0;
}

/* Writes n decoded frames of c->pcm. 0, or -1 with c->werr. */
static int put_pcm(client_ctx *c, int n) {
    errno = 0;
    if (ct_wav_write(c->w, c->pcm, (size_t)n * (size_t)c->spf) != CT_OK || (c->samples == 0 && fflush(c->w->f) != 0)) {
        c->werr = errno ? errno : EIO;
        return -1;
    }
    c->samples += (uint64_t)n * (uint64_t)c->spf;
    return 0;
}

/* One decoded chunk of frames that took since t0: time to first audio, decode ms, timeline. */
static void chunk_done(client_ctx *c, int frames, double t0) {
    double now = ct_now_ms(), ms = now - t0;
    if (!c->chunks) c->ttfa_ms = now - c->t0;
    c->chunks++;
    c->dec_sum += ms;
    if (ms > c->dec_max) c->dec_max = ms;
    if (c->timeline)
        fprintf(c->timeline, "{\"t_ms\":%.3f,\"frames\":%d,\"decode_ms\":%.3f}\n", now - c->t0, frames, ms);
}

/* Windowed: n frames at f as the program of the smallest chunk >= n computes them: the window
   is the last context + chunk frames of the utterance (zeros before its start) ending at f's
   last frame; its last n frames' samples are kept. */
static int decode_window(client_ctx *c, const int32_t *f, int n) {
    const ct_manifest_program *p = ct_codec_manifest_program(c->man, n);
    const int G = c->G, H = c->n_hist, nctx = c->man->context_frames + p->chunk_frames - n;
    char e[512];
    if (ct_codec_decode_window(c->codec, c->hist + (size_t)(H - nctx) * G, nctx, f, n, c->pcm, e, sizeof e) != CT_OK) {
        snprintf(c->err, sizeof c->err, "decode: %s", e);
        return -1;
    }
    memmove(c->hist, c->hist + (size_t)n * G, sizeof(int32_t) * (size_t)(H - n) * G);
    memcpy(c->hist + (size_t)(H - n) * G, f, sizeof(int32_t) * (size_t)n * G);
    return put_pcm(c, n);
}

/* Decodes and writes the pending frames: native, all of them as one timed chunk; windowed, each
   complete ramp chunk, and with flush (the utterance or stream ended) the rest as a last chunk.
   0, or -1 with c->err / c->werr. */
static int decode_pending(client_ctx *c, int flush) {
    int off = 0;
    while (off < c->n_pend) {
        double t = ct_now_ms();
        int n = c->n_pend - off;
        if (c->man) {
            int target = c->man->ramp[c->ramp_i < c->man->n_ramp ? c->ramp_i : c->man->n_ramp - 1];
            if (n < target && !flush) break;
            if (n > target) n = target;
            if (decode_window(c, c->pend + (size_t)off * c->G, n)) return -1;
            c->ramp_i++;
        } else {
            for (int k = 0; k < n;) {
                int m = n - k < MAX_PUSH ? n - k : MAX_PUSH;
                char e[512];
                if (ct_codec_stream_push(c->cs, c->pend + (size_t)(off + k) * c->G, m, c->pcm, e, sizeof e) != CT_OK) {
                    snprintf(c->err, sizeof c->err, "decode: %s", e);
                    return -1;
                }
                if (put_pcm(c, m)) return -1;
                k += m;
            }
        }
        chunk_done(c, n, t);
        off += n;
    }
    c->n_pend -= off;
    if (off && c->n_pend) memmove(c->pend, c->pend + (size_t)off * c->G, sizeof(int32_t) * (size_t)c->n_pend * c->G);
    return 0;
}

/* Back to the start-of-utterance state of the decoder. */
static void decoder_reset(client_ctx *c) {
    if (c->man) {
        memset(c->hist, 0, sizeof(int32_t) * (size_t)c->n_hist * c->G);
        c->ramp_i = 0;
    } else {
        ct_codec_stream_reset(c->cs);
    }
}

/* Utterance index starts: the frames so far are decoded, then the decoder starts afresh (the
   server's codec does the same at each utterance). */
static int on_utterance(void *ud, uint32_t index, char *msg, size_t cap) {
    client_ctx *c = ud;
    (void)index;
    if (decode_pending(c, 1)) {
        snprintf(msg, cap, "%s", c->err[0] ? c->err : "write failed");
        return 1;
    }
    decoder_reset(c);
    return 0;
}

/* One piece of the response body. */
static int on_data(void *ud, const unsigned char *p, size_t n) {
    client_ctx *c = ud;
    if (ct_cli_signal) return 1;
    if (!c->checked) {
        char ct[128] = "";
        c->checked = 1;
        ct_http_resp_header(c->resp, "Content-Type", ct, sizeof ct);
        c->is_codes = c->resp->status == 200 && strcmp(ct, CT_CODES_CONTENT_TYPE) == 0;
        if (c->resp->status == 200 && !c->is_codes) {
            snprintf(c->err, sizeof c->err, "the server answered '%s', not a codes stream (%s)", ct,
                     CT_CODES_CONTENT_TYPE);
            return 1;
        }
    }
    if (!c->is_codes) return 0; /* an error body: read whole, reported after */
    if (ct_codes_feed(c->rd, p, n, c->err, sizeof c->err) != CT_OK) return 1;
    return decode_pending(c, 0) ? 1 : 0;
}

/* The request body: the text and the flags a server request carries. NULL on OOM. */
static char *request_json(const ct_cli_gen *a, const char *text) {
    json_t *j = json_pack("{s:s, s:s, s:b, s:s, s:I}", "input", text, "response_format", "codes", "stream", 1,
                          "stream_format", "audio", "seed", (json_int_t)a->seed);
    if (!j) return NULL;
    if (a->speaker) json_object_set_new(j, "voice", json_string(a->speaker));
    if (a->language) json_object_set_new(j, "language", json_string(a->language));
    if (a->instruct) json_object_set_new(j, "instructions", json_string(a->instruct));
    if (a->greedy || a->temperature == 0.0f)
        json_object_set_new(j, "temperature", json_real(0));
    else if (!isnan(a->temperature))
        json_object_set_new(j, "temperature", json_real(a->temperature));
    if (!isnan(a->top_p)) json_object_set_new(j, "top_p", json_real(a->top_p));
    if (a->top_k >= 0) json_object_set_new(j, "top_k", json_integer(a->top_k));
    if (!isnan(a->rep)) json_object_set_new(j, "repetition_penalty", json_real(a->rep));
    if (a->max_new_tokens > 0) json_object_set_new(j, "max_new_tokens", json_integer(a->max_new_tokens));
    if (a->streaming || a->non_streaming) json_object_set_new(j, "non_streaming_mode", json_boolean(a->non_streaming));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

/* The message of an OpenAI error body, else the body's start. */
static void error_body(const ct_http_resp *r, char *buf, size_t cap) {
    json_t *j = json_loadb((const char *)r->body, r->body_len, 0, NULL);
    const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    if (m)
        snprintf(buf, cap, "%s", m);
    else
        snprintf(buf, cap, "%.200s", r->body_len ? (const char *)r->body : "(empty body)");
    json_decref(j);
}

int ct_cli_client(int argc, char **argv) {
    ct_cli_gen a;
    ct_cli_gen_init(&a);
    const char *url = NULL, *backend = "native", *manifest = NULL, *out = NULL, *api_key = NULL, *timeline = NULL;
    int timeout_s = 60, use_float = 0;
    ct_opt all[64], opts[64];
    int na = ct_cli_gen_opts(&a, all, 48), n = 0;
    for (int i = 0; i < na; i++) {
        int drop = 0;
        for (size_t k = 0; k < sizeof NOT_SENT / sizeof *NOT_SENT; k++) drop |= strcmp(all[i].name, NOT_SENT[k]) == 0;
        if (drop) continue;
        opts[n] = all[i];
        if (!strcmp(opts[n].name, "model")) opts[n].help = "model directory whose speech_tokenizer/ decodes (native)";
        n++;
    }
    const ct_opt extra[] = {
        {"url", 0, CT_OPT_STR, &url, "URL", "server, http://HOST:PORT (required)"},
        {"decoder-backend", 0, CT_OPT_STR, &backend, "NAME",
         "native (the exact stateful decoder, default) | windowed (what the exported programs compute, on our "
         "windowed decoder) | onnx (the programs in ONNX Runtime: python/codectalk/client.py)"},
        {"manifest", 0, CT_OPT_STR, &manifest, "DIR",
         "windowed: the `export codec` directory (manifest.json: context, ramp, hashes)"},
        {"api-key", 0, CT_OPT_STR, &api_key, "KEY", "sent as Authorization: Bearer KEY"},
        {"output", 'o', CT_OPT_STR, &out, "FILE", "output WAV file, or '-' for raw s16le on stdout"},
        {"float", 0, CT_OPT_FLAG, &use_float, NULL, "write 32-bit float WAV instead of 16-bit PCM"},
        {"timeline", 0, CT_OPT_STR, &timeline, "FILE", "one JSON line per decoded chunk: t_ms, frames, decode_ms"},
        {"timeout", 0, CT_OPT_INT, &timeout_s, "S",
         "longest wait for the next bytes from the server, 1..3600 (default 60)"},
        {NULL, 0, 0, NULL, NULL, NULL}};
    for (int i = 0; extra[i].name; i++) opts[n++] = extra[i];
    opts[n] = (ct_opt){NULL, 0, 0, NULL, NULL, NULL};
    int r =
        ct_args_parse(argc, argv, opts,
                      "usage: codectalk client --url URL [--decoder-backend native|windowed --manifest DIR] -m DIR\n"
                      "                        [--text TEXT | -f FILE] [options] -o out.wav\n"
                      "Streams codec frames from a codectalk server (response_format codes) and decodes them here.");
    if (r) return r < 0 ? 2 : 0;
    if (ct_cli_gen_check(&a) != 0) return 2;
    if (!url) {
        fprintf(stderr, "error: --url URL is required (e.g. http://127.0.0.1:8000)\n");
        return 2;
    }
    if (strcmp(backend, "onnx") == 0) {
        fprintf(stderr,
                "error: --decoder-backend onnx is not in the C client (no ONNX Runtime C API on Debian 12); "
                "run the Python client: python3 python/codectalk/client.py --url %s --manifest %s ... "
                "(docs/CODES_WIRE.md)\n",
                url, manifest ? manifest : "DIR");
        return 2;
    }
    int windowed = strcmp(backend, "windowed") == 0;
    if (!windowed && strcmp(backend, "native") != 0) {
        fprintf(stderr, "error: --decoder-backend must be native, windowed or onnx, got '%s'\n", backend);
        return 2;
    }
    if (!windowed && manifest) {
        fprintf(stderr, "error: --manifest is for --decoder-backend windowed; native decodes with -m DIR's codec\n");
        return 2;
    }
    if (windowed && !manifest) {
        fprintf(stderr, "error: --decoder-backend windowed needs --manifest DIR (an `export codec` directory)\n");
        return 2;
    }
    if (!a.model) {
        fprintf(stderr, "error: -m DIR is required: its speech_tokenizer/ is the codec that decodes (native)\n");
        return 2;
    }
    if (timeout_s < 1 || timeout_s > 3600) {
        fprintf(stderr, "error: --timeout must be in [1, 3600], got %d\n", timeout_s);
        return 2;
    }
    if (!out) {
        fprintf(stderr, "error: -o FILE (or -o - for raw s16le on stdout) is required\n");
        return 2;
    }
    int raw = strcmp(out, "-") == 0;
    if (raw && use_float) {
        fprintf(stderr, "error: --float writes a WAV file; -o - is raw s16le\n");
        return 2;
    }
    if (raw && isatty(1)) {
        fprintf(stderr, "error: refusing to write raw audio to a terminal (pipe it: | aplay -f S16_LE -r 24000)\n");
        return 2;
    }
    char host[256], err[1024], codec_id[80], tmp_path[4200] = "";
    int port = 0;
    if (ct_http_parse_url(url, host, sizeof host, &port, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: --url: %s\n", err);
        return 2;
    }
    client_ctx c;
    memset(&c, 0, sizeof c);
    ct_codec *codec = NULL;
    ct_codec_manifest *man = NULL;
    char *text = NULL, *body = NULL;
    FILE *f = NULL;
    ct_http_resp resp;
    memset(&resp, 0, sizeof resp);
    int rc = 1;
    if (ct_codec_load(a.model, &codec, err, sizeof err) != CT_OK ||
        ct_codec_id(a.model, codec_id, sizeof codec_id, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (windowed) { /* the manifest must be valid, its programs unchanged, and for this codec */
        man = malloc(sizeof *man);
        if (!man || ct_codec_manifest_read(manifest, 1, man, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", man ? err : "out of memory");
            goto done;
        }
        if (strcmp(man->codec_id, codec_id) != 0 || man->hop != ct_codec_samples_per_frame(codec) ||
            man->sample_rate != ct_codec_sample_rate(codec) || man->num_quantizers != ct_codec_n_groups(codec)) {
            fprintf(stderr, "error: the manifest in '%s' is for another codec (%s) than -m (%s)\n", manifest,
                    man->codec_id, codec_id);
            goto done;
        }
        c.man = man;
        int pmax = 0;
        for (int i = 0; i < man->n_programs; i++)
            if (man->programs[i].chunk_frames > pmax) pmax = man->programs[i].chunk_frames;
        c.n_hist = man->context_frames + pmax;
        c.hist = calloc((size_t)c.n_hist * (size_t)ct_codec_n_groups(codec), sizeof(int32_t));
        c.pcm = malloc(sizeof(float) * (size_t)(pmax > MAX_PUSH ? pmax : MAX_PUSH) *
                       (size_t)ct_codec_samples_per_frame(codec));
        if (!c.hist || !c.pcm) {
            fprintf(stderr, "error: out of memory\n");
            goto done;
        }
    }
    text = ct_cli_get_text(a.text, a.file, 1);
    if (!text) goto done;
    if (!text[0]) {
        fprintf(stderr, "error: the text is empty\n");
        goto done;
    }
    body = request_json(&a, text);
    c.G = ct_codec_n_groups(codec);
    c.spf = ct_codec_samples_per_frame(codec);
    if (!c.pcm) c.pcm = malloc(sizeof(float) * MAX_PUSH * (size_t)c.spf);
    ct_codes_cb cb = {&c, on_header, on_frame, on_utterance};
    c.rd = ct_codes_reader_new(&cb);
    if (!body || !c.pcm || !c.rd || ct_codec_stream_create(codec, MAX_PUSH, &c.cs, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", c.cs ? "out of memory" : err);
        goto done;
    }
    if (timeline && !(c.timeline = fopen(timeline, "w"))) {
        fprintf(stderr, "error: cannot open --timeline '%s': %s\n", timeline, strerror(errno));
        goto done;
    }
    f = ct_cli_open_audio_out(out, raw, tmp_path, sizeof tmp_path);
    if (!f) goto done;
    ct_wav_writer w;
    errno = 0;
    if (ct_wav_begin(&w, f, ct_codec_sample_rate(codec),
                     raw         ? CT_WAV_RAW_S16LE
                     : use_float ? CT_WAV_FLOAT32
                                 : CT_WAV_PCM16) != CT_OK) {
        rc = ct_cli_write_error(f, raw ? "stdout" : out, errno ? errno : EIO, 0);
        goto done;
    }
    c.w = &w;
    c.codec = codec;
    c.codec_id = codec_id;
    c.resp = &resp;
    char auth[400] = "";
    if (api_key) snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", api_key);
    c.t0 = ct_now_ms();
    ct_status st = ct_http_request(host, port, "POST", "/v1/audio/speech", auth, body, strlen(body), timeout_s * 1000,
                                   on_data, &c, &resp, err, sizeof err);
    if (ct_cli_signal) {
        fprintf(stderr, "interrupted: %s\n", tmp_path[0] ? "no output written" : "output is incomplete");
        goto done;
    }
    if (c.werr) {
        rc = ct_cli_write_error(f, raw ? "stdout" : out, c.werr, 0);
        goto done;
    }
    if (c.err[0]) {
        fprintf(stderr, "error: %s\n", c.err);
        goto done;
    }
    if (st != CT_OK) {
        fprintf(stderr, "error: %s: %s\n", url, err);
        goto done;
    }
    if (resp.status != 200) {
        char m[600];
        error_body(&resp, m, sizeof m);
        fprintf(stderr, "error: the server answered %d: %s\n", resp.status, m);
        goto done;
    }
    if (!c.checked && on_data(&c, NULL, 0)) { /* 200 without a body */
        fprintf(stderr, "error: %s\n", c.err);
        goto done;
    }
    if (ct_codes_finish(c.rd, c.err, sizeof c.err) != CT_OK) {
        fprintf(stderr, "error: %s\n", c.err);
        goto done;
    }
    if (decode_pending(&c, 1)) { /* windowed: the last, partial chunk */
        if (c.werr)
            rc = ct_cli_write_error(f, raw ? "stdout" : out, c.werr, 0);
        else
            fprintf(stderr, "error: %s\n", c.err);
        goto done;
    }
    errno = 0;
    int fin = ct_wav_end(&w) == CT_OK ? 0 : (errno ? errno : EIO);
    if (!fin && f != stdout) {
        FILE *fc = f;
        f = NULL;
        if (fclose(fc) != 0) fin = errno ? errno : EIO;
    }
    if (fin) {
        rc = ct_cli_write_error(f, raw ? "stdout" : out, fin, 0);
        goto done;
    }
    if (tmp_path[0] && rename(tmp_path, out) != 0) {
        fprintf(stderr, "error: cannot rename '%s' to '%s': %s\n", tmp_path, out, strerror(errno));
        goto done;
    }
    tmp_path[0] = 0;
    if (!a.quiet) {
        double audio = (double)c.samples / ct_codec_sample_rate(codec), wall = (ct_now_ms() - c.t0) / 1e3;
        size_t wire = resp.body_len;
        fprintf(stderr,
                "%s: %.2f s of audio in %.2f s, time to first audio %.3f s; %d frames in %zu bytes on the wire "
                "(%.0f B per audio second); %s decode: %d chunks, %.2f ms per chunk (max %.2f), stop: %s\n",
                raw ? "stdout" : out, audio, wall, c.chunks ? c.ttfa_ms / 1e3 : 0.0, ct_codes_reader_frames(c.rd), wire,
                audio > 0 ? wire / audio : 0.0, backend, c.chunks, c.chunks ? c.dec_sum / c.chunks : 0.0, c.dec_max,
                ct_stop_reason_str((ct_stop_reason)ct_codes_reader_stop(c.rd)));
    }
    rc = 0;
done:
    if (f && f != stdout) fclose(f);
    if (tmp_path[0]) remove(tmp_path); /* never leave a partial WAV behind */
    if (c.timeline && fclose(c.timeline) != 0 && rc == 0) {
        fprintf(stderr, "error: writing --timeline '%s' failed\n", timeline);
        rc = 1;
    }
    ct_http_resp_free(&resp);
    ct_codes_reader_free(c.rd);
    ct_codec_stream_free(c.cs);
    free(c.pend);
    free(c.pcm);
    free(c.hist);
    free(man);
    free(body);
    free(text);
    ct_codec_free(codec);
    return ct_cli_exit_signal(rc);
}
