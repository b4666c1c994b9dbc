/* response_format "codes" on /v1/audio/speech (docs/CODES_WIRE.md), over real loopback
   sockets with a tiny random model: the whole body, the chunked binary stream and the SSE
   deltas carry the same bytes; they decode to the session's frames with the served header
   (rates, ids, codebook size); decoding those frames with the exact codec gives the server's
   own WAV for the same request byte for byte; a codes-only engine (no codec: the server decodes
   no audio) serves codes and refuses wav; a codec id over 255 bytes is refused at start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audio/wav.h"
#include "codectalk.h"
#include "core/clock.h"
#include "ct_test.h"
#include "serve/client.h"
#include "serve/codes_wire.h"
#include "serve/http.h"
#include "test_models.h"

static ct_model *M;
static ct_codec *C;
static const char *TEXT = "Codes on the wire, audio on the client.";
static const char *LONG_TEXT =
    "The first sentence of this test is long enough to fill a good part of one utterance on its own, and it keeps "
    "going for a while with a few more words. A second sentence follows it, so that the engine has to decide where "
    "the first utterance ends and the next one begins. The third and last sentence lands in the next utterance.";
static const char *CODEC_ID = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static ct_status post(int port, const char *body, ct_http_resp *r) {
    char err[256];
    ct_status st = ct_http_request("127.0.0.1", port, "POST", "/v1/audio/speech", NULL, body, strlen(body), 30000, NULL,
                                   NULL, r, err, sizeof err);
    if (st != CT_OK) fprintf(stderr, "request failed: %s\n", err);
    return st;
}

typedef struct {
    ct_codes_header h;
    int headers, n;
    int32_t codes[512 * 16];
    int utt_start[16]; /* frame index where utterance i starts (utt_start[0] = 0) */
    int n_utts;
} frames;

static int on_header(void *ud, const ct_codes_header *h, char *msg, size_t cap) {
    frames *f = ud;
    (void)msg, (void)cap;
    f->h = *h;
    f->headers++;
    return 0;
}

static int on_frame(void *ud, uint32_t index, const int32_t *codes, int n, char *msg, size_t cap) {
    frames *f = ud;
    (void)index, (void)msg, (void)cap;
    if (f->n >= 512 || n != 16) return 1;
    memcpy(f->codes + f->n * 16, codes, sizeof(int32_t) * 16);
    f->n++;
    return 0;
}

static int on_utterance(void *ud, uint32_t index, char *msg, size_t cap) {
    frames *f = ud;
    (void)msg, (void)cap;
    if (f->n_utts >= 16 || index != (uint32_t)f->n_utts) return 1;
    f->utt_start[f->n_utts++] = f->n;
    return 0;
}

static ct_status decode_body(const unsigned char *b, size_t n, frames *f, char *err, size_t cap) {
    memset(f, 0, sizeof *f);
    f->n_utts = 1;
    ct_codes_cb cb = {f, on_header, on_frame, on_utterance};
    ct_codes_reader *r = ct_codes_reader_new(&cb);
    ct_status st = ct_codes_feed(r, b, n, err, cap);
    if (st == CT_OK) st = ct_codes_finish(r, err, cap);
    ct_codes_reader_free(r);
    return st;
}

/* WAV bytes (PCM16, exact header) of f's frames, each utterance decoded from a fresh state
   (resets = 1) or all as one stream (0); *len gets the size. */
static unsigned char *frames_wav(const frames *f, int resets, size_t *len) {
    float *pcm = malloc(sizeof(float) * 1920 * (size_t)(f->n ? f->n : 1));
    char err[512];
    int ok = pcm != NULL;
    for (int u = 0; ok && u < (resets ? f->n_utts : 1); u++) {
        int a = resets ? f->utt_start[u] : 0, b = resets && u + 1 < f->n_utts ? f->utt_start[u + 1] : f->n;
        ok = ct_codec_decode(C, f->codes + (size_t)a * 16, b - a, pcm + (size_t)a * 1920, err, sizeof err) == CT_OK;
    }
    FILE *t = tmpfile();
    ct_wav_writer w;
    ct_wav_begin(&w, t, 24000, CT_WAV_PCM16);
    ct_wav_write(&w, pcm, 1920 * (size_t)f->n);
    ct_wav_end(&w);
    long sz = ftell(t);
    unsigned char *b = ok ? malloc((size_t)sz) : NULL;
    rewind(t);
    if (b && fread(b, 1, (size_t)sz, t) != (size_t)sz) ok = 0;
    fclose(t);
    free(pcm);
    *len = (size_t)sz;
    if (!ok) free(b);
    return ok ? b : NULL;
}

/* The session's frames for the request (seed, max_new_tokens, voice). */
static int session_frames(uint64_t seed, int mnt, const char *voice, int32_t *out, int cap) {
    ct_session *s = NULL;
    char err[512];
    ct_session_params sp = ct_session_params_default();
    if (ct_session_create(M, &sp, &s, err, sizeof err) != CT_OK) return -1;
    ct_gen_params g = ct_gen_params_default();
    g.text = TEXT;
    g.speaker = voice;
    g.language = "auto";
    g.seed = seed;
    g.max_new_tokens = mnt;
    int n = 0, got = 1;
    if (ct_session_start(s, &g) != CT_OK) n = -1;
    while (n >= 0 && n < cap && ct_session_next_frame(s, out + n * 16, &got) == CT_OK && got) n++;
    ct_session_free(s);
    return n;
}

static ct_http *serve(const ct_codec *codec, ct_engine **E, int utterance_bytes, int deadline_ms) {
    char err[1024];
    ct_engine_params ep = ct_engine_params_default();
    ep.max_context = 512;
    ep.warmup = 0;
    *E = NULL;
    CHECKF(ct_engine_create(M, codec, &ep, E, err, sizeof err) == CT_OK, "%s", err);
    ct_http_params hp = ct_http_params_default();
    hp.port = 0;
    hp.model_id = "tiny-codes";
    hp.codec_id = CODEC_ID;
    ct_stream_params sp = ct_stream_params_default();
    sp.utterance_bytes = utterance_bytes;
    sp.deadline_ms = deadline_ms;
    hp.stream = &sp;
    ct_http *H = NULL;
    CHECKF(*E && ct_http_start(*E, M, &hp, &H, err, sizeof err) == CT_OK, "%s", err);
    return H;
}

int main(void) {
    char err[1024];
    CHECK(ct_test_load("tiny", "serve-codes-tiny", 9, &M, &C));
    if (!M || !C) return ct_test_finish();
    const char *voice = ct_model_speaker(M, 0);
    ct_engine *E = NULL;
    ct_http *H = serve(C, &E, 300, 0);
    if (!H) return ct_test_finish();
    int port = ct_http_port(H);
    const int MNT = 24;
    static int32_t ref[256 * 16];
    int nref = session_frames(11, MNT, voice, ref, 256);
    CHECK(nref > 2);
    char body[1024];
    ct_http_resp full, bin, sse, wav;

    /* 1. the whole codes stream in one body */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":11,\"max_new_tokens\":%d,\"response_format\":\"codes\"}",
             TEXT, voice, MNT);
    CHECK(post(port, body, &full) == CT_OK);
    char v[128];
    CHECK(full.status == 200 && ct_http_resp_header(&full, "Content-Type", v, sizeof v) &&
          strcmp(v, CT_CODES_CONTENT_TYPE) == 0);
    frames *f = malloc(sizeof *f);
    CHECKF(decode_body(full.body, full.body_len, f, err, sizeof err) == CT_OK, "%s", err);
    CHECK(f->headers == 1 && f->h.sample_rate == 24000 && f->h.samples_per_frame == 1920 &&
          f->h.frame_rate_mhz == 12500 && f->h.n_groups == 16 &&
          f->h.codebook_size == ct_model_get_info(M).codebook_size && strcmp(f->h.codec_id, CODEC_ID) == 0 &&
          strcmp(f->h.model_id, "tiny-codes") == 0);
    CHECKF(f->n == nref && memcmp(f->codes, ref, sizeof(int32_t) * 16 * (size_t)nref) == 0, "%d frames vs %d", f->n,
           nref);
    CHECK(full.body_len == 4 + 20 + strlen(CODEC_ID) + strlen("tiny-codes") + (size_t)nref * 42 + 11);
    snprintf(v, sizeof v, "%.3f", nref * 0.08);
    char as[32];
    CHECK(ct_http_resp_header(&full, "x-codectalk-audio-seconds", as, sizeof as) && strcmp(as, v) == 0);

    /* 2. chunked binary stream: the same bytes */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":11,\"max_new_tokens\":%d,\"response_format\":\"codes\","
             "\"stream\":true,\"stream_format\":\"audio\"}",
             TEXT, voice, MNT);
    CHECK(post(port, body, &bin) == CT_OK);
    CHECK(bin.status == 200 && bin.body_len == full.body_len && memcmp(bin.body, full.body, full.body_len) == 0);
    CHECK(ct_http_resp_header(&bin, "Transfer-Encoding", v, sizeof v) && strstr(v, "chunked"));

    /* 3. SSE: speech.codes.delta events whose base64 payloads concatenate to the same bytes,
       then speech.audio.done */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":11,\"max_new_tokens\":%d,\"response_format\":\"codes\","
             "\"stream\":true}",
             TEXT, voice, MNT);
    CHECK(post(port, body, &sse) == CT_OK);
    CHECK(sse.status == 200 && ct_http_resp_header(&sse, "Content-Type", v, sizeof v) &&
          strcmp(v, "text/event-stream") == 0);
    {
        unsigned char *cat = malloc(sse.body_len + 1);
        size_t n = 0;
        int deltas = 0, done = 0, other = 0;
        char *text = strndup((const char *)sse.body, sse.body_len);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "data: ", 6) != 0) continue;
            json_t *j = json_loads(line + 6, 0, NULL);
            const char *type = json_string_value(json_object_get(j, "type"));
            const char *c64 = json_string_value(json_object_get(j, "codes"));
            if (type && strcmp(type, "speech.codes.delta") == 0 && c64 && !done) {
                long k = ct_b64_decode(cat + n, c64, strlen(c64));
                if (k < 0)
                    other++;
                else
                    n += (size_t)k, deltas++;
            } else if (type && strcmp(type, "speech.audio.done") == 0 && json_object_get(j, "usage")) {
                done++;
            } else {
                other++;
            }
            json_decref(j);
        }
        CHECKF(deltas >= 2 && done == 1 && other == 0, "%d deltas, %d done, %d other", deltas, done, other);
        CHECK(n == full.body_len && memcmp(cat, full.body, n) == 0);
        free(text);
        free(cat);
    }

    /* 4. the exact codec on the served frames = the server's own WAV for the same request */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":11,\"max_new_tokens\":%d,\"response_format\":\"wav\"}", TEXT,
             voice, MNT);
    CHECK(post(port, body, &wav) == CT_OK && wav.status == 200);
    {
        size_t n = 0;
        unsigned char *b = frames_wav(f, 1, &n);
        CHECK(f->n_utts == 1);
        /* the samples (the server's WAV streams: its header carries the streaming sizes) */
        CHECKF(b && n == wav.body_len && memcmp(b + 44, wav.body + 44, n - 44) == 0, "%zu vs %zu bytes", n, wav.body_len);
        free(b);
    }
    ct_http_resp_free(&wav);

    /* 4b. two utterances: the utterance record marks where the server's codec started afresh;
       decoding each utterance from a fresh state gives the server's WAV, one stream does not */
    {
        ct_http_resp cr, wr;
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":3,\"max_new_tokens\":8,\"response_format\":\"codes\"}",
                 LONG_TEXT, voice);
        CHECK(post(port, body, &cr) == CT_OK && cr.status == 200);
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":3,\"max_new_tokens\":8,\"response_format\":\"wav\"}",
                 LONG_TEXT, voice);
        CHECK(post(port, body, &wr) == CT_OK && wr.status == 200);
        CHECKF(decode_body(cr.body, cr.body_len, f, err, sizeof err) == CT_OK, "%s", err);
        CHECKF(f->n_utts == 2 && f->utt_start[1] > 0 && f->utt_start[1] < f->n, "%d utterances", f->n_utts);
        size_t n = 0;
        unsigned char *b = frames_wav(f, 1, &n);
        CHECKF(b && n == wr.body_len && memcmp(b + 44, wr.body + 44, n - 44) == 0, "%zu vs %zu bytes", n, wr.body_len);
        free(b);
        b = frames_wav(f, 0, &n);
        CHECK(b && n == wr.body_len && memcmp(b + 44, wr.body + 44, n - 44) != 0);
        free(b);
        char tok[32];
        CHECK(ct_http_resp_header(&cr, "x-codectalk-output-tokens", tok, sizeof tok) && atoi(tok) == f->n);
        ct_http_resp_free(&cr);
        ct_http_resp_free(&wr);
    }
    ct_http_resp_free(&full);
    ct_http_resp_free(&bin);
    ct_http_resp_free(&sse);
    ct_http_stop(H);
    ct_engine_free(E);

    /* 5. a codes-only engine (no codec at all): codes are served, wav is refused */
    H = serve(NULL, &E, 300, 0);
    if (H) {
        port = ct_http_port(H);
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":11,\"max_new_tokens\":%d,\"response_format\":\"codes\","
                 "\"stream\":true,\"stream_format\":\"audio\"}",
                 TEXT, voice, MNT);
        ct_http_resp r;
        CHECK(post(port, body, &r) == CT_OK && r.status == 200);
        CHECKF(decode_body(r.body, r.body_len, f, err, sizeof err) == CT_OK, "%s", err);
        CHECK(f->n == nref && memcmp(f->codes, ref, sizeof(int32_t) * 16 * (size_t)nref) == 0);
        ct_http_resp_free(&r);
        snprintf(body, sizeof body, "{\"input\":\"%s\",\"voice\":\"%s\",\"response_format\":\"wav\"}", TEXT, voice);
        CHECK(post(port, body, &r) == CT_OK && r.status == 400 && strstr((const char *)r.body, "no codec"));
        ct_http_resp_free(&r);
        snprintf(body, sizeof body, "{\"input\":\"%s\",\"voice\":\"%s\",\"response_format\":\"flac\"}", TEXT,
                 voice);
        CHECK(post(port, body, &r) == CT_OK && r.status == 400 && strstr((const char *)r.body, "no codec"));
        ct_http_resp_free(&r);
        ct_http_stop(H);
    }
    ct_engine_free(E);

    /* 5b. a server whose utterance size is 0 (no split): one utterance, no utterance record,
       still the server's own WAV */
    H = serve(C, &E, 0, 0);
    if (H) {
        port = ct_http_port(H);
        ct_http_resp cr, wr;
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":3,\"max_new_tokens\":12,\"response_format\":\"codes\"}",
                 LONG_TEXT, voice);
        CHECK(post(port, body, &cr) == CT_OK && cr.status == 200);
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":3,\"max_new_tokens\":12,\"response_format\":\"wav\"}",
                 LONG_TEXT, voice);
        CHECK(post(port, body, &wr) == CT_OK && wr.status == 200);
        CHECKF(decode_body(cr.body, cr.body_len, f, err, sizeof err) == CT_OK, "%s", err);
        CHECK(f->n_utts == 1 && f->n > 8);
        size_t n = 0;
        unsigned char *b = frames_wav(f, 1, &n);
        CHECK(b && n == wr.body_len && memcmp(b + 44, wr.body + 44, n - 44) == 0);
        free(b);
        ct_http_resp_free(&cr);
        ct_http_resp_free(&wr);
        ct_http_stop(H);
    }
    ct_engine_free(E);

    /* 5c. the request's deadline spans its utterances: with 0.35 of the time a request of 5 or
       more utterances takes, it fails (a deadline per utterance stream would let it finish, each
       utterance taking a fifth or less): the binary stream ends with an error record after some
       frames, SSE with the error record and speech.audio.error, the whole body is a 504 */
    {
        double T = 1e30;
        H = serve(C, &E, 60, 0);
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":3,\"max_new_tokens\":50,\"response_format\":\"codes\","
                 "\"stream\":true,\"stream_format\":\"audio\"}",
                 LONG_TEXT, voice);
        for (int k = 0; H && k < 2; k++) {
            ct_http_resp r;
            double t0 = ct_now_ms();
            CHECK(post(ct_http_port(H), body, &r) == CT_OK && r.status == 200);
            double t = ct_now_ms() - t0;
            if (t < T) T = t;
            CHECKF(decode_body(r.body, r.body_len, f, err, sizeof err) == CT_OK && f->n_utts >= 5, "%s (%d utterances)",
                   err, f->n_utts);
            ct_http_resp_free(&r);
        }
        int full_frames = f->n;
        ct_http_stop(H);
        ct_engine_free(E);
        int deadline = (int)(0.35 * T);
        H = serve(C, &E, 60, deadline > 20 ? deadline : 20);
        if (H) {
            ct_http_resp r;
            CHECK(post(ct_http_port(H), body, &r) == CT_OK && r.status == 200);
            ct_status st = decode_body(r.body, r.body_len, f, err, sizeof err);
            CHECKF(st == CT_ERR_IO && strstr(err, "failed at the server") && f->n > 0 && f->n < full_frames,
                   "deadline %d ms of %.0f: status %d '%s', %d of %d frames", deadline, T, st, err, f->n, full_frames);
            ct_http_resp_free(&r);
            char sbody[1024];
            snprintf(sbody, sizeof sbody, "%.*s}", (int)(strstr(body, ",\"stream_format\"") - body), body);
            CHECK(post(ct_http_port(H), sbody, &r) == CT_OK && r.status == 200);
            const char *last = NULL;
            for (const char *q = strstr((const char *)r.body, "data: "); q; q = strstr(q + 6, "data: ")) last = q;
            CHECK(last && strstr(last, "\"speech.audio.error\""));
            ct_http_resp_free(&r);
            snprintf(sbody, sizeof sbody, "%.*s}", (int)(strstr(body, ",\"stream\"") - body), body);
            CHECKF(post(ct_http_port(H), sbody, &r) == CT_OK && r.status == 504 &&
                       strstr((const char *)r.body, "\"timeout\""),
                   "status %d: %.300s", r.status, r.body ? (const char *)r.body : "");
            ct_http_resp_free(&r);
            ct_http_stop(H);
        }
        ct_engine_free(E);
    }

    /* 6. a codec id longer than the header holds is refused at start */
    {
        ct_engine_params ep = ct_engine_params_default();
        ep.max_context = 256;
        CHECK(ct_engine_create(M, NULL, &ep, &E, err, sizeof err) == CT_OK);
        char longid[300];
        memset(longid, 'a', 299);
        longid[299] = 0;
        ct_http_params hp = ct_http_params_default();
        hp.port = 0;
        hp.model_id = "tiny";
        hp.codec_id = longid;
        ct_http *H2 = NULL;
        CHECK(ct_http_start(E, M, &hp, &H2, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "codec_id") && !H2);
        ct_engine_free(E);
    }
    free(f);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
