/* The HTTP server on the public stream engine, end to end over real loopback sockets with a
   tiny random model: the three response modes byte for byte against the session +
   streaming-codec path (written by the WAV writer), two concurrent streams equal their solo
   runs, the SSE event sequence, /metrics, auth, malformed / oversized / unknown-voice requests,
   a request refused at prefill (400), 404/405, a client that disconnects mid-stream frees its
   slot, 503 + Retry-After under a full queue, the request -> chunk schedule mapping, and
   --codec-chunk schedules giving the same samples. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "audio/wav.h"
#include "codec/codec.h"
#include "codectalk.h"
#include "ct_test.h"
#include "serve/client.h"
#include "serve/http.h"
#include "serve/request.h"
#include "test_models.h"

static ct_model *M;
static ct_codec *C;
static const char *KEY_HDR = "Authorization: Bearer s3cret\r\n";
static const char *TEXT = "Serving must match the synth path, byte for byte.";

/* WAV bytes (PCM16, exact header) of the synth path: session frames, each decoded by the
   exact streaming codec as it is produced, written by the WAV writer. */
static unsigned char *reference_wav(uint64_t seed, int max_new_tokens, const char *speaker, size_t *len,
                                    int *frames) {
    ct_session *s = NULL;
    ct_codec_stream *cs = NULL;
    char err[512];
    ct_session_params sp = ct_session_params_default();
    if (ct_session_create(M, &sp, &s, err, sizeof err) != CT_OK) return NULL;
    if (ct_codec_stream_create(C, 1, &cs, err, sizeof err) != CT_OK) return NULL;
    ct_gen_params g = ct_gen_params_default();
    g.text = TEXT;
    g.speaker = speaker;
    g.language = "auto";
    g.seed = seed;
    g.max_new_tokens = max_new_tokens;
    FILE *f = tmpfile();
    ct_wav_writer w;
    float pcm[1920];
    int32_t codes[16];
    int got = 1, n = 0;
    ct_wav_begin(&w, f, 24000, CT_WAV_PCM16);
    if (ct_session_start(s, &g) != CT_OK) return NULL;
    while (ct_session_next_frame(s, codes, &got) == CT_OK && got) {
        if (ct_codec_stream_push(cs, codes, 1, pcm, err, sizeof err) != CT_OK) return NULL;
        ct_wav_write(&w, pcm, 1920);
        n++;
    }
    ct_wav_end(&w);
    long sz = ftell(f);
    unsigned char *b = malloc((size_t)sz);
    rewind(f);
    if (fread(b, 1, (size_t)sz, f) != (size_t)sz) return NULL;
    fclose(f);
    ct_session_free(s);
    ct_codec_stream_free(cs);
    *len = (size_t)sz;
    *frames = n;
    return b;
}

static int PORT;

static ct_status post(int port, const char *hdr, const char *body, ct_http_on_data cb, void *ud, ct_http_resp *r) {
    char err[256];
    ct_status st = ct_http_request("127.0.0.1", port, "POST", "/v1/audio/speech", hdr, body, strlen(body), 30000,
                                   cb, ud, r, err, sizeof err);
    if (st != CT_OK) fprintf(stderr, "request failed: %s\n", err);
    return st;
}

static ct_status get(int port, const char *path, const char *hdr, ct_http_resp *r) {
    char err[256];
    return ct_http_request("127.0.0.1", port, "GET", path, hdr, NULL, 0, 10000, NULL, NULL, r, err, sizeof err);
}

static size_t b64dec(const char *s, unsigned char *out) {
    static int T[256];
    static int init;
    const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (!init) {
        for (int i = 0; i < 256; i++) T[i] = -1;
        for (int i = 0; i < 64; i++) T[(unsigned char)A[i]] = i;
        init = 1;
    }
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (; *s && *s != '='; s++) {
        int v = T[(unsigned char)*s];
        if (v < 0) return (size_t)-1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return n;
}

static int body_has_error(const ct_http_resp *r, const char *param, const char *needle) {
    json_error_t je;
    json_t *j = json_loadb((const char *)r->body, r->body_len, 0, &je);
    json_t *e = json_object_get(j, "error");
    int ok = json_is_object(e) && json_is_string(json_object_get(e, "message")) &&
             json_is_string(json_object_get(e, "type")) && json_object_get(e, "code") &&
             json_object_get(e, "param");
    if (ok && param) ok = json_is_string(json_object_get(e, "param")) &&
                          strcmp(json_string_value(json_object_get(e, "param")), param) == 0;
    if (ok && needle) ok = strstr(json_string_value(json_object_get(e, "message")), needle) != NULL;
    if (!ok) fprintf(stderr, "error body: %.*s\n", (int)r->body_len, r->body);
    json_decref(j);
    return ok;
}

/* ---- concurrency helpers ---------------------------------------------------------------- */

typedef struct {
    int port;
    char body[512];
    atomic_int *stop;     /* abort when set */
    int slow_ms;          /* sleep per piece */
    int hold;             /* 1: read nothing more until *stop is set, then disconnect */
    ct_http_resp r;
    ct_status st;
    int abort_after;      /* > 0: disconnect after this many pieces */
    int pieces;
} client_job;

/* A new engine with ep and an HTTP server for it without an API key (*E, *H NULL on failure). */
static void start_server(const ct_engine_params *ep, ct_http_params *hp, ct_engine **E, ct_http **H) {
    char err[1024];
    *E = NULL;
    *H = NULL;
    CHECKF(ct_engine_create(M, C, ep, E, err, sizeof err) == CT_OK, "%s", err);
    hp->api_key = NULL;
    CHECKF(*E && ct_http_start(*E, M, hp, H, err, sizeof err) == CT_OK, "%s", err);
}

/* POSTs body (with the key) to the test server and checks the status and error body. */
static void expect_error(const char *body, int status, const char *param, const char *msg_part) {
    ct_http_resp r;
    CHECKF(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK, "post %s", body);
    CHECKF(r.status == status && body_has_error(&r, param, msg_part), "%s: status %d", body, r.status);
    ct_http_resp_free(&r);
}

/* A cleared client for port, aborting when *stop is set (stop may be NULL). */
static void client_init(client_job *c, int port, atomic_int *stop) {
    memset(c, 0, sizeof *c);
    c->port = port;
    c->stop = stop;
}

static int client_cb(void *ud, const unsigned char *p, size_t n) {
    client_job *c = ud;
    (void)p, (void)n;
    c->pieces++;
    if (c->hold) {
        while (!atomic_load(c->stop)) ct_test_sleep_ms(5);
        return 1;
    }
    if (c->slow_ms) ct_test_sleep_ms(c->slow_ms);
    if (c->abort_after && c->pieces >= c->abort_after) return 1;
    return c->stop && atomic_load(c->stop);
}

static void *client_thread(void *arg) {
    client_job *c = arg;
    c->st = post(c->port, KEY_HDR, c->body, client_cb, c, &c->r);
    return NULL;
}

static int wait_until(ct_engine *e, int active, int queued, int ms) {
    for (int t = 0; t < ms; t += 5) {
        ct_engine_counters k = ct_engine_get_counters(e);
        if ((active < 0 || k.active == active) && (queued < 0 || k.queued == queued)) return 1;
        ct_test_sleep_ms(5);
    }
    return 0;
}

int main(void) {
    char err[1024];
    CHECK(ct_test_load("tiny", "serve-tiny", 5, &M, &C));
    if (!M || !C) return ct_test_finish();
    const char *voice = ct_model_speaker(M, 1);
    CHECK(voice != NULL);

    /* request -> chunk schedule (docs/SERVE.md) */
    {
        char b[64];
        CHECK(strcmp(ct_speech_schedule(-1, 0, 64, NULL, b, sizeof b), "exact") == 0);
        CHECK(strcmp(ct_speech_schedule(-1, 0, 64, "ramp:2,4", b, sizeof b), "ramp:2,4") == 0);
        CHECK(strcmp(ct_speech_schedule(0, 0, 64, "ramp:2,4", b, sizeof b), "exact") == 0);
        CHECK(strcmp(ct_speech_schedule(1, 1, 64, NULL, b, sizeof b), "exact") == 0);
        CHECK(strcmp(ct_speech_schedule(3, 0, 64, NULL, b, sizeof b), "fixed:3,3") == 0);
        CHECK(strcmp(ct_speech_schedule(-1, 4, 64, NULL, b, sizeof b), "fixed:1,4") == 0);
        CHECK(strcmp(ct_speech_schedule(2, 4, 64, NULL, b, sizeof b), "fixed:2,4") == 0);
        CHECK(strcmp(ct_speech_schedule(8, 4, 64, NULL, b, sizeof b), "fixed:8,8") == 0);
        CHECK(strcmp(ct_speech_schedule(1000, 0, 64, NULL, b, sizeof b), "fixed:64,64") == 0);
    }

    ct_engine_params ep = ct_engine_params_default();
    ep.max_streams = 2;
    ep.queue_cap = 2;
    ep.max_context = 512;
    ep.warmup = 1;
    ct_engine *E = NULL;
    CHECKF(ct_engine_create(M, C, &ep, &E, err, sizeof err) == CT_OK, "%s", err);
    ct_http_params hp = ct_http_params_default();
    hp.port = 0;
    hp.api_key = "s3cret";
    hp.model_id = "tiny-test";
    hp.connection_timeout_s = 5;
    ct_http *H = NULL;
    CHECKF(E && ct_http_start(E, M, &hp, &H, err, sizeof err) == CT_OK, "%s", err);
    if (!E || !H) return ct_test_finish();
    PORT = ct_http_port(H);
    CHECK(PORT > 0);

    ct_http_resp r;
    int ready = 0;
    for (int t = 0; t < 600 && !ready; t++) { /* /health needs no key; 503 until warm */
        if (get(PORT, "/health", NULL, &r) == CT_OK) {
            ready = r.status == 200;
            CHECK(r.status == 200 || r.status == 503);
            ct_http_resp_free(&r);
        }
        if (!ready) ct_test_sleep_ms(50);
    }
    CHECK(ready);

    const int MNT = 30; /* at most 29 frames */
    size_t ref_len = 0;
    int ref_frames = 0;
    unsigned char *ref = reference_wav(7, MNT, voice, &ref_len, &ref_frames);
    CHECK(ref && ref_frames > 2 && ref_len == 44 + (size_t)ref_frames * 1920 * 2);
    if (!ref) return ct_test_finish();
    char body[512];

    /* 1. non-streaming WAV */
    snprintf(body, sizeof body,
             "{\"model\":\"tiny-test\",\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":%d}", TEXT,
             voice, MNT);
    CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
    CHECKF(r.status == 200, "status %d", r.status);
    /* a plain request streams as it is made (as the OpenAI API does): the streaming WAV header
       (the largest whole-sample data size), then exactly synth's samples */
    CHECKF(r.body_len == ref_len && memcmp(r.body + 44, ref + 44, ref_len - 44) == 0 && memcmp(r.body, ref, 36) != 0 &&
               r.body[40] == 0xDA && r.body[41] == 0xFF && r.body[43] == 0xFF && r.body[4] == 0xFE,
           "wav %zu vs %zu bytes", r.body_len, ref_len);
    char hv[64];
    CHECK(ct_http_resp_header(&r, "Content-Type", hv, sizeof hv) && strcmp(hv, "audio/wav") == 0);
    CHECK(ct_http_resp_header(&r, "Transfer-Encoding", hv, sizeof hv));
    ct_http_resp_free(&r);

    /* 2. raw PCM stream (chunked), voice as {"id": ...} */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":{\"id\":\"%s\"},\"seed\":7,\"max_new_tokens\":%d,"
             "\"response_format\":\"pcm\",\"stream\":true,\"stream_format\":\"audio\"}",
             TEXT, voice, MNT);
    CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
    CHECK(r.status == 200);
    CHECK(ct_http_resp_header(&r, "Transfer-Encoding", hv, sizeof hv));
    CHECKF(r.body_len == ref_len - 44 && memcmp(r.body, ref + 44, ref_len - 44) == 0, "pcm %zu vs %zu", r.body_len,
           ref_len - 44);
    CHECK(r.n_events >= 1);
    ct_http_resp_free(&r);

    /* 2a. paragraph_pause_ms: the same two utterances with exactly 100 ms of zeros between */
    {
        ct_http_resp a, b;
        const char *fmt = "{\"input\":\"One two three.\\n\\nFour five six.\",\"voice\":\"%s\",\"seed\":7,"
                          "\"max_new_tokens\":%d,\"response_format\":\"pcm\",\"paragraph_pause_ms\":%d}";
        snprintf(body, sizeof body, fmt, voice, 6, 0);
        CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &a) == CT_OK && a.status == 200);
        snprintf(body, sizeof body, fmt, voice, 6, 100);
        CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &b) == CT_OK && b.status == 200);
        size_t z = 100 * 24 * 2, k0 = 0, found = 0;
        while (k0 < a.body_len && k0 < b.body_len && a.body[k0] == b.body[k0]) k0++;
        for (size_t k = k0 > z ? (k0 - z) & ~(size_t)1 : 0; k <= k0 && !found && b.body_len == a.body_len + z; k += 2) {
            int zero = 1;
            for (size_t i = 0; i < z && zero; i++) zero = b.body[k + i] == 0;
            if (zero && memcmp(b.body + k + z, a.body + k, a.body_len - k) == 0) found = k;
        }
        CHECKF(found > 0, "paragraph pause: %zu vs %zu bytes", b.body_len, a.body_len);
        ct_http_resp_free(&a);
        ct_http_resp_free(&b);
    }

    /* 2c. normalize: the same bytes as the normalised text sent as it is (codes: normalised before the split) */
    for (int codes = 0; codes < 2; codes++) {
        ct_http_resp a, b;
        const char *fmt = "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":4,"
                          "\"response_format\":\"%s\"%s}";
        const char *rf = codes ? "codes" : "pcm";
        snprintf(body, sizeof body, fmt, "Pay $5 by 10:30.", voice, rf, ",\"normalize\":true");
        CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &a) == CT_OK && a.status == 200);
        snprintf(body, sizeof body, fmt, "Pay five dollars by ten thirty.", voice, rf, "");
        CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &b) == CT_OK && b.status == 200);
        CHECKF(a.body_len == b.body_len && a.body_len > 0 && !memcmp(a.body, b.body, a.body_len),
               "normalize (%s): %zu vs %zu bytes", rf, a.body_len, b.body_len);
        ct_http_resp_free(&a);
        ct_http_resp_free(&b);
    }

    /* 2b. streamed WAV: streaming header, then the same samples */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"speaker\":\"%s\",\"seed\":7,\"max_new_tokens\":%d,\"stream_format\":\"audio\"}",
             TEXT, voice, MNT);
    CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
    CHECK(r.status == 200 && r.body_len == ref_len && memcmp(r.body, "RIFF", 4) == 0 &&
          memcmp(r.body + 44, ref + 44, ref_len - 44) == 0 && r.body[40] == 0xDA && r.body[43] == 0xFF);
    ct_http_resp_free(&r);

    /* 3. SSE */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":%d,\"response_format\":\"pcm\","
             "\"stream\":true}",
             TEXT, voice, MNT);
    CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
    CHECK(r.status == 200 && ct_http_resp_header(&r, "Content-Type", hv, sizeof hv) &&
          strcmp(hv, "text/event-stream") == 0);
    {
        unsigned char *pcm = malloc(ref_len + 16);
        size_t np = 0;
        int n_delta = 0, n_done = 0, order_ok = 1, usage_ok = 0;
        char *txt = (char *)r.body;
        for (char *ev = txt; ev && *ev;) {
            char *end = strstr(ev, "\n\n");
            if (!end) {
                order_ok = 0;
                break;
            }
            *end = 0;
            CHECK(strncmp(ev, "data: ", 6) == 0);
            json_error_t je;
            json_t *j = json_loads(ev + 6, 0, &je);
            const char *type = json_string_value(json_object_get(j, "type"));
            if (type && strcmp(type, "speech.audio.delta") == 0) {
                if (n_done) order_ok = 0;
                n_delta++;
                const char *a = json_string_value(json_object_get(j, "audio"));
                CHECK(a && strcmp(json_string_value(json_object_get(j, "response_format")), "pcm") == 0);
                size_t k = a && np + strlen(a) * 3 / 4 <= ref_len ? b64dec(a, pcm + np) : (size_t)-1;
                if (k == (size_t)-1) order_ok = 0;
                else np += k;
            } else if (type && strcmp(type, "speech.audio.done") == 0) {
                n_done++;
                json_t *u = json_object_get(j, "usage");
                usage_ok = json_integer_value(json_object_get(u, "output_tokens")) == ref_frames &&
                           json_integer_value(json_object_get(u, "input_tokens")) > 0 &&
                           json_integer_value(json_object_get(u, "total_tokens")) ==
                               json_integer_value(json_object_get(u, "input_tokens")) + ref_frames &&
                           json_is_object(json_object_get(u, "input_token_details"));
            } else {
                order_ok = 0;
            }
            json_decref(j);
            ev = end + 2;
        }
        CHECKF(n_delta >= 1 && n_done == 1 && order_ok && usage_ok, "deltas %d done %d order %d usage %d", n_delta,
               n_done, order_ok, usage_ok);
        CHECKF(np == ref_len - 44 && memcmp(pcm, ref + 44, np) == 0, "sse pcm %zu vs %zu", np, ref_len - 44);
        free(pcm);
    }
    ct_http_resp_free(&r);

    /* 4. two concurrent streams equal their solo runs */
    {
        client_job cj[2];
        pthread_t th[2];
        unsigned char *refs[2];
        size_t rl[2];
        int rf[2];
        for (int i = 0; i < 2; i++) {
            client_init(&cj[i], PORT, NULL);
            snprintf(cj[i].body, sizeof cj[i].body,
                     "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":%d,\"max_new_tokens\":%d,\"response_format\":"
                     "\"pcm\",\"stream_format\":\"audio\",\"initial_codec_chunk_frames\":%d}",
                     TEXT, voice, 11 + i, MNT, 3 * i);
            refs[i] = reference_wav((uint64_t)(11 + i), MNT, voice, &rl[i], &rf[i]);
        }
        for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, client_thread, &cj[i]);
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < 2; i++) {
            CHECK(cj[i].st == CT_OK && cj[i].r.status == 200);
            CHECKF(refs[i] && cj[i].r.body_len == rl[i] - 44 && memcmp(cj[i].r.body, refs[i] + 44, rl[i] - 44) == 0,
                   "stream %d: %zu vs %zu bytes", i, cj[i].r.body_len, rl[i] - 44);
            ct_http_resp_free(&cj[i].r);
            free(refs[i]);
        }
    }

    /* 5. auth, bad input, limits, routes */
    CHECK(post(PORT, NULL, "{\"input\":\"hi\"}", NULL, NULL, &r) == CT_OK);
    CHECK(r.status == 401 && body_has_error(&r, NULL, "API key"));
    ct_http_resp_free(&r);
    CHECK(post(PORT, "Authorization: Bearer wrong\r\n", "{\"input\":\"hi\"}", NULL, NULL, &r) == CT_OK);
    CHECK(r.status == 401);
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/models", NULL, &r) == CT_OK && r.status == 401);
    ct_http_resp_free(&r);
    expect_error("{\"input\": \"hi\",", 400, NULL, "not valid JSON");
    expect_error("{\"input\": 5}", 400, "input", "must be a string");
    expect_error("{\"input\": \"hi\", \"seed\": \"x\"}", 400, "seed", NULL);
    expect_error("{\"input\": \"   \"}", 400, "input", "empty");
    expect_error("{\"input\": \"hi\", \"voice\": \"nobody\"}", 400, "voice", voice);
    expect_error("{\"input\": \"hi\", \"language\": \"klingon\"}", 400, "language", "auto");
    expect_error("{\"input\": \"hi\", \"language\": \"xx-YY\"}", 400, "language", "english");
    /* a language code is a language: "en-US" is english */
    snprintf(body, sizeof body, "{\"input\":\"hi\",\"voice\":\"%s\",\"language\":\"en-US\",\"max_new_tokens\":2}",
             voice);
    CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
    CHECKF(r.status == 200, "language en-US: status %d", r.status);
    ct_http_resp_free(&r);
    expect_error("{\"input\": \"hi\", \"response_format\": \"m4a\"}", 400, "response_format", "mp3, opus, aac");
    expect_error("{\"input\": \"hi\", \"speed\": 4.5}", 400, "speed", "[0.25, 4.0]");
    expect_error("{\"input\": \"hi\", \"speed\": 2, \"response_format\": \"codes\"}", 400, "speed", "codes");
    expect_error("{\"input\": \"hi\", \"sentence_pause_ms\": 10001}", 400, "sentence_pause_ms", "[0, 10000]");
    expect_error("{\"input\": \"hi\", \"normalize\": \"yes\"}", 400, "normalize", "boolean");
    expect_error("{\"input\": \"hi\", \"paragraph_pause_ms\": 5, \"response_format\": \"codes\"}", 400,
                 "paragraph_pause_ms", "codes");
    expect_error("{\"input\": \"hi\", \"model\": \"other\"}", 404, "model", NULL);
    {
        size_t big = 100 * 1024;
        char *b = malloc(big + 64);
        memset(b, 'a', big + 64);
        memcpy(b, "{\"input\":\"", 10);
        memcpy(b + big, "\"}", 3);
        CHECK(post(PORT, KEY_HDR, b, NULL, NULL, &r) == CT_OK);
        CHECKF(r.status == 413, "status %d", r.status);
        ct_http_resp_free(&r);
        /* 5000 characters: within the body limit, over the input limit */
        memset(b, 'a', 6000);
        memcpy(b, "{\"input\":\"", 10);
        memcpy(b + 5010, "\"}", 3);
        CHECK(post(PORT, KEY_HDR, b, NULL, NULL, &r) == CT_OK);
        CHECK(r.status == 400 && body_has_error(&r, "input", "limit"));
        ct_http_resp_free(&r);
        free(b);
    }
    /* valid JSON the model refuses at prefill: the stream fails validation -> 400 */
    snprintf(body, sizeof body, "{\"input\":\"hi\",\"voice\":\"%s\",\"instructions\":\"whisper\"}", voice);
    expect_error(body, 400, NULL, "instruction");
    CHECK(get(PORT, "/nope", KEY_HDR, &r) == CT_OK && r.status == 404);
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/audio/speech", KEY_HDR, &r) == CT_OK && r.status == 405 &&
          ct_http_resp_header(&r, "Allow", hv, sizeof hv) && strcmp(hv, "POST") == 0);
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/models", KEY_HDR, &r) == CT_OK && r.status == 200 && strstr((char *)r.body, "tiny-test"));
    ct_http_resp_free(&r);

    /* 6. disconnect mid-stream frees the slot within a step */
    {
        client_job cj;
        memset(&cj, 0, sizeof cj);
        cj.abort_after = 1;
        ct_engine_counters k0 = ct_engine_get_counters(E);
        CHECK(post(PORT, KEY_HDR,
                   "{\"input\":\"A long request that the client abandons after the first piece of audio.\","
                   "\"stream_format\":\"audio\",\"response_format\":\"pcm\",\"seed\":3,\"max_new_tokens\":400}",
                   client_cb, &cj, &cj.r) == CT_OK);
        CHECK(cj.r.aborted == 1);
        ct_http_resp_free(&cj.r);
        CHECK(wait_until(E, 0, 0, 3000));
        ct_engine_counters k1 = ct_engine_get_counters(E);
        CHECKF(k1.cancelled == k0.cancelled + 1 && k1.kv_bytes_in_use == 0, "cancelled %llu -> %llu",
               (unsigned long long)k0.cancelled, (unsigned long long)k1.cancelled);
    }

    /* 7. metrics */
    CHECK(get(PORT, "/metrics", KEY_HDR, &r) == CT_OK && r.status == 200);
    {
        const char *names[] = {"codectalk_streams_active 0", "codectalk_requests_admitted_total",
                               "codectalk_requests_rejected_total 0", "codectalk_ttfa_seconds_bucket{le=\"+Inf\"}",
                               "codectalk_rtf_count", "codectalk_underruns_total", "codectalk_kv_bytes_in_use 0",
                               "codectalk_prefill_deferrals_total", "codectalk_http_responses_total{code=\"401\"} 3",
                               "codectalk_requests_cancelled_total 1", "# TYPE codectalk_ttfa_seconds histogram",
                               "codectalk_requests_failed_total 1", "codectalk_steps_total", "codectalk_ready 1",
                               "codectalk_streams_max 2", "codectalk_rtf_count 13"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            CHECKF(r.body && strstr((char *)r.body, names[i]), "metrics lack '%s'", names[i]);
        ct_engine_counters k = ct_engine_get_counters(E);
        CHECKF(k.admitted == 15 && k.completed == 13 && k.failed == 1, "admitted %llu completed %llu failed %llu",
               (unsigned long long)k.admitted, (unsigned long long)k.completed, (unsigned long long)k.failed);
    }
    ct_http_resp_free(&r);
    /* 7a. OpenAI aliases: tts-1 names the served model, alloy a voice of it; the listings show them */
    snprintf(body, sizeof body, "{\"model\":\"tts-1\",\"input\":\"hi\",\"voice\":\"alloy\",\"max_new_tokens\":2}");
    CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
    CHECKF(r.status == 200, "aliases: status %d %.*s", r.status, (int)r.body_len, (const char *)r.body);
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/models", KEY_HDR, &r) == CT_OK && r.status == 200 && r.body &&
          strstr((char *)r.body, "\"tts-1-hd\"") && strstr((char *)r.body, "\"gpt-4o-mini-tts\""));
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/models/tts-1", KEY_HDR, &r) == CT_OK && r.status == 200 && r.body &&
          strstr((char *)r.body, "\"root\":\"tiny-test\""));
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/models/tiny-test", KEY_HDR, &r) == CT_OK && r.status == 200);
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/models/whisper-1", KEY_HDR, &r) == CT_OK && r.status == 404 && body_has_error(&r, "model", "whisper-1"));
    ct_http_resp_free(&r);
    CHECK(get(PORT, "/v1/audio/voices", KEY_HDR, &r) == CT_OK && r.status == 200 && r.body &&
          strstr((char *)r.body, "\"alloy\":\"vivian\"") && strstr((char *)r.body, "\"onyx\":\"uncle_fu\""));
    ct_http_resp_free(&r);
    expect_error("{\"input\": \"hi\", \"voice\": \"nobody\"}", 400, "voice", "aliases");
    /* 7b. compressed formats stream as they encode (plain requests included); speed stretches */
    {
        static const struct {
            const char *fmt, *mime, *magic;
            size_t mlen;
        } F[] = {{"mp3", "audio/mpeg", "ID3", 3}, {"opus", "audio/ogg", "OggS", 4}, {"aac", "audio/aac", "\xff", 1},
                 {"flac", "audio/flac", "fLaC", 4}};
        for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
            snprintf(body, sizeof body,
                     "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":%d,\"response_format\":\"%s\"}",
                     TEXT, voice, MNT, F[i].fmt);
            CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
            CHECKF(r.status == 200 && r.body_len > 100 && memcmp(r.body, F[i].magic, F[i].mlen) == 0 &&
                       ct_http_resp_header(&r, "Content-Type", hv, sizeof hv) && !strcmp(hv, F[i].mime) &&
                       ct_http_resp_header(&r, "Transfer-Encoding", hv, sizeof hv),
                   "%s: status %d, %zu bytes", F[i].fmt, r.status, r.body_len);
            ct_http_resp_free(&r);
        }
        /* speed 2: half the samples (raw PCM), streamed */
        snprintf(body, sizeof body,
                 "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":%d,\"response_format\":\"pcm\","
                 "\"speed\":2}",
                 TEXT, voice, MNT);
        CHECK(post(PORT, KEY_HDR, body, NULL, NULL, &r) == CT_OK);
        size_t half = (ref_len - 44) / 2;
        CHECKF(r.status == 200 && r.body_len + 2 * 960 >= half && r.body_len <= half + 2 * 960, "speed 2: %zu bytes of %zu",
               r.body_len, ref_len - 44);
        ct_http_resp_free(&r);
    }
    ct_http_stop(H);
    ct_engine_free(E);

    /* 8. 503 + Retry-After: one slot, queue of one, three long requests */
    ep.max_streams = 1;
    ep.queue_cap = 1;
    ep.warmup = 0;
    start_server(&ep, &hp, &E, &H);
    if (E && H) {
        atomic_int stop = 0;
        client_job cj[2];
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            client_init(&cj[i], ct_http_port(H), &stop);
            cj[i].hold = 1; /* a stalled reader keeps its slot (its stream pauses) */
            snprintf(cj[i].body, sizeof cj[i].body,
                     "{\"input\":\"%s\",\"stream\":true,\"seed\":%d,\"max_new_tokens\":400}", TEXT, i);
        }
        pthread_create(&th[0], NULL, client_thread, &cj[0]);
        CHECK(wait_until(E, 1, 0, 5000));
        pthread_create(&th[1], NULL, client_thread, &cj[1]);
        CHECK(wait_until(E, 1, 1, 5000));
        CHECK(post(ct_http_port(H), NULL, "{\"input\":\"third\"}", NULL, NULL, &r) == CT_OK);
        CHECKF(r.status == 503 && ct_http_resp_header(&r, "Retry-After", hv, sizeof hv) && atoi(hv) >= 1,
               "status %d", r.status);
        CHECK(body_has_error(&r, NULL, "busy"));
        ct_http_resp_free(&r);
        atomic_store(&stop, 1);
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
            CHECK(cj[i].st == CT_OK && cj[i].r.status == 200);
            ct_http_resp_free(&cj[i].r);
        }
        CHECK(wait_until(E, 0, 0, 3000));
        ct_engine_counters k = ct_engine_get_counters(E);
        CHECKF(k.rejected == 1 && k.queued_total >= 1, "rejected %llu", (unsigned long long)k.rejected);
    }
    ct_http_stop(H);
    ct_engine_free(E);

    /* 9. --codec-chunk 4 (schedule fixed:1,4) and a first chunk of 6 (fixed:6,6): the same
       samples (a raw PCM stream and a WAV, two at once); codec_chunk over the engine's
       max_chunk_frames is rejected */
    ct_engine_params ep9 = ct_engine_params_default();
    ep9.max_streams = 2;
    ep9.max_context = 512;
    E = NULL;
    H = NULL;
    CHECKF(ct_engine_create(M, C, &ep9, &E, err, sizeof err) == CT_OK, "%s", err);
    hp.api_key = NULL;
    hp.codec_chunk = ep9.max_chunk_frames + 1;
    CHECK(E && ct_http_start(E, M, &hp, &H, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "codec_chunk") &&
          !H);
    hp.codec_chunk = 4;
    CHECKF(E && ct_http_start(E, M, &hp, &H, err, sizeof err) == CT_OK, "%s", err);
    if (E && H) {
        client_job cj[2]; /* both read to the end */
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            client_init(&cj[i], ct_http_port(H), NULL);
            snprintf(cj[i].body, sizeof cj[i].body,
                     i ? "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":%d,"
                         "\"initial_codec_chunk_frames\":6}"
                       : "{\"input\":\"%s\",\"voice\":\"%s\",\"seed\":7,\"max_new_tokens\":%d,"
                         "\"response_format\":\"pcm\",\"stream\":true,\"stream_format\":\"audio\"}",
                     TEXT, voice, MNT);
            pthread_create(&th[i], NULL, client_thread, &cj[i]);
        }
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        CHECKF(cj[0].st == CT_OK && cj[0].r.status == 200 && cj[0].r.body_len == ref_len - 44 &&
                   memcmp(cj[0].r.body, ref + 44, ref_len - 44) == 0,
               "chunked codec pcm %zu vs %zu bytes", cj[0].r.body_len, ref_len - 44);
        CHECKF(cj[1].st == CT_OK && cj[1].r.status == 200 && cj[1].r.body_len == ref_len &&
                   memcmp(cj[1].r.body + 44, ref + 44, ref_len - 44) == 0,
               "chunked codec wav %zu vs %zu bytes", cj[1].r.body_len, ref_len);
        for (int i = 0; i < 2; i++) ct_http_resp_free(&cj[i].r);
    }
    ct_http_stop(H);
    ct_engine_free(E);
    free(ref);
    ct_codec_free(C);
    ct_model_free(M);
    return ct_test_finish();
}
