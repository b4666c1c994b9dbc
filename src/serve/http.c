/* HTTP front end (see http.h): routing, auth, body limits, the three response modes of
   /v1/audio/speech on top of the engine's job API, and the metrics page. Connection threads
   block on their own job only; disconnects are detected by polling the socket while waiting. */
#define _GNU_SOURCE
#include "serve/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "serve/request.h"

#define READ_SAMPLES (8 * 1920) /* samples per streamed piece at most */
#define POLL_MS 20              /* wait granularity for disconnect checks */

enum { ST_200, ST_400, ST_401, ST_404, ST_405, ST_413, ST_500, ST_503, ST_OTHER, ST_N };
static const int ST_CODES[ST_N] = {200, 400, 401, 404, 405, 413, 500, 503, 0};

struct ct_http {
    struct MHD_Daemon *d;
    ct_srv_engine *e;
    const ct_model *m;
    ct_http_params p;
    char host[64], model_id[128], api_key[256];
    const char *voices[256], *langs[256];
    int n_voices, n_langs;
    int port, listen_fd;
    atomic_int stopping;
    atomic_ullong status_count[ST_N];
};

typedef struct {
    int is_speech;
    char *body;
    size_t n, cap;
    int too_big;
} conn_ctx;

typedef struct {
    ct_http *h;
    struct MHD_Connection *c;
    ct_job *job;
    ct_resp_mode mode;
    ct_resp_format fmt;
    int header_done, end_sent;
    char *pend;     /* bytes ready to hand to MHD */
    size_t pn, poff, pcap;
    int16_t *tmp;   /* [READ_SAMPLES] */
} stream_ctx;

ct_http_params ct_http_params_default(void) {
    ct_http_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.host = "127.0.0.1";
    p.port = 8000;
    p.max_connections = 64;
    p.connection_timeout_s = 30;
    p.max_body_bytes = 65536;
    p.max_input_chars = CT_SPEECH_MAX_INPUT_CHARS;
    p.default_initial_frames = 1;
    return p;
}

/* ---- responses ---------------------------------------------------------------------------- */

static void count_status(ct_http *h, int code) {
    int i = 0;
    while (i < ST_OTHER && ST_CODES[i] != code) i++;
    atomic_fetch_add(&h->status_count[i], 1);
}

static enum MHD_Result send_buf(ct_http *h, struct MHD_Connection *c, int code, const char *ctype, char *buf,
                                size_t n, const char *const *hdrs) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    for (int i = 0; hdrs && hdrs[i]; i += 2) MHD_add_response_header(r, hdrs[i], hdrs[i + 1]);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, r);
    MHD_destroy_response(r);
    count_status(h, code);
    return ret;
}

static enum MHD_Result send_text(ct_http *h, struct MHD_Connection *c, int code, const char *ctype,
                                 const char *text, const char *const *hdrs) {
    char *b = strdup(text);
    if (!b) return MHD_NO;
    return send_buf(h, c, code, ctype, b, strlen(b), hdrs);
}

static enum MHD_Result send_error(ct_http *h, struct MHD_Connection *c, const ct_api_error *e,
                                  const char *const *hdrs) {
    char *j = ct_api_error_json(e);
    if (!j) return MHD_NO;
    return send_buf(h, c, e->http_status, "application/json", j, strlen(j), hdrs);
}

static enum MHD_Result send_err(ct_http *h, struct MHD_Connection *c, int code, const char *type,
                                const char *param, const char *ecode, const char *msg) {
    ct_api_error e;
    ct_api_error_set(&e, code, type, param, ecode, "%s", msg);
    return send_error(h, c, &e, NULL);
}

static enum MHD_Result send_json(ct_http *h, struct MHD_Connection *c, int code, json_t *doc) {
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!s) return MHD_NO;
    return send_buf(h, c, code, "application/json", s, strlen(s), NULL);
}

/* 1 when the peer closed or reset the connection (or the server is stopping). */
static int client_gone(ct_http *h, struct MHD_Connection *c) {
    if (atomic_load(&h->stopping)) return 1;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd pf = {ci->connect_fd, POLLRDHUP, 0};
    if (poll(&pf, 1, 0) <= 0) return 0;
    return (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* The 44-byte WAV header: exact sizes for n samples, or the streaming maximum when n is
   UINT64_MAX (as the WAV writer does on a pipe). */
static void wav_header(unsigned char h[44], int rate, uint64_t n) {
    uint64_t data = n == UINT64_MAX ? UINT64_MAX : n * 2;
    uint32_t d32 = data > 0xFFFFFFFFull - 36 ? 0xFFFFFFFFu - 36 : (uint32_t)data;
    uint32_t v[] = {d32 + 36, 16, 1 | (1u << 16), (uint32_t)rate, (uint32_t)rate * 2, 2 | (16u << 16), d32};
    memcpy(h, "RIFF", 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    memcpy(h + 36, "data", 4);
    const int at[] = {4, 16, 20, 24, 28, 32, 40};
    for (int k = 0; k < 7; k++)
        for (int b = 0; b < 4; b++) h[at[k] + b] = (unsigned char)(v[k] >> (8 * b));
}

static void s16le(unsigned char *dst, const int16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint16_t u = (uint16_t)src[i];
        dst[2 * i] = (unsigned char)u;
        dst[2 * i + 1] = (unsigned char)(u >> 8);
    }
}

static size_t b64(char *dst, const unsigned char *src, size_t n) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)src[i] << 16) | ((uint32_t)src[i + 1] << 8) | src[i + 2];
        dst[o++] = T[v >> 18], dst[o++] = T[(v >> 12) & 63], dst[o++] = T[(v >> 6) & 63], dst[o++] = T[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)src[i] << 16;
        if (i + 1 < n) v |= (uint32_t)src[i + 1] << 8;
        dst[o++] = T[v >> 18], dst[o++] = T[(v >> 12) & 63];
        dst[o++] = i + 1 < n ? T[(v >> 6) & 63] : '=';
        dst[o++] = '=';
    }
    return o;
}

static json_t *usage_json(const ct_job_info_t *ji) {
    return json_pack("{s:i, s:i, s:i, s:{s:i, s:i}}", "input_tokens", ji->text_tokens, "output_tokens",
                     ji->frames, "total_tokens", ji->text_tokens + ji->frames, "input_token_details",
                     "text_tokens", ji->text_tokens, "audio_tokens", 0);
}

/* ---- streaming reader ------------------------------------------------------------------- */

static int pend_reserve(stream_ctx *s, size_t more) {
    if (s->pn + more <= s->pcap) return 0;
    size_t nc = (s->pn + more) * 2;
    char *nb = realloc(s->pend, nc);
    if (!nb) return -1;
    s->pend = nb;
    s->pcap = nc;
    return 0;
}

static int pend_event(stream_ctx *s, json_t *ev) {
    char *t = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    if (!t) return -1;
    size_t n = strlen(t);
    int r = pend_reserve(s, n + 8);
    if (!r) {
        memcpy(s->pend + s->pn, "data: ", 6);
        memcpy(s->pend + s->pn + 6, t, n);
        memcpy(s->pend + s->pn + 6 + n, "\n\n", 2);
        s->pn += n + 8;
    }
    free(t);
    return r;
}

/* Fills s->pend with the next piece; returns 1 when something is pending, 0 at the end of
   the stream, -1 to abort the connection. */
static int stream_fill(stream_ctx *s) {
    ct_http *h = s->h;
    int rate = ct_srv_engine_get_limits(h->e).sample_rate;
    s->pn = s->poff = 0;
    for (;;) {
        if (s->end_sent) return 0;
        int finished = 0;
        size_t n = ct_job_read(s->job, s->tmp, READ_SAMPLES, POLL_MS, &finished);
        if (n > 0) {
            size_t bytes = n * 2 + (s->header_done || s->fmt != CT_RESP_WAV ? 0 : 44);
            unsigned char *raw = malloc(bytes);
            if (!raw) return -1;
            size_t off = 0;
            if (!s->header_done && s->fmt == CT_RESP_WAV) wav_header(raw, rate, UINT64_MAX), off = 44;
            s->header_done = 1;
            s16le(raw + off, s->tmp, n);
            int r = 0;
            if (s->mode == CT_MODE_AUDIO) {
                r = pend_reserve(s, bytes);
                if (!r) memcpy(s->pend, raw, bytes), s->pn = bytes;
            } else {
                char *enc = malloc((bytes + 2) / 3 * 4 + 1);
                if (enc) {
                    size_t en = b64(enc, raw, bytes);
                    enc[en] = 0;
                    r = pend_event(s, json_pack("{s:s, s:s, s:s}", "type", "speech.audio.delta", "audio", enc,
                                                "response_format", s->fmt == CT_RESP_WAV ? "wav" : "pcm"));
                    free(enc);
                } else {
                    r = -1;
                }
            }
            free(raw);
            return r < 0 ? -1 : 1;
        }
        ct_job_info_t ji = ct_job_info(s->job);
        if (finished || ji.state == CT_JOB_FAILED) {
            if (ji.state == CT_JOB_FAILED) {
                if (s->mode == CT_MODE_AUDIO) return -1; /* truncated body: the client sees an error */
                ct_api_error e;
                ct_api_error_set(&e, 500, "server_error", NULL, "generation_failed", "%s", ji.err);
                s->end_sent = 1;
                json_t *ee = json_pack("{s:s, s:s, s:o, s:o}", "message", e.message, "type", e.type, "param",
                                       json_null(), "code", json_string(e.code));
                return pend_event(s, json_pack("{s:s, s:o}", "type", "speech.audio.error", "error", ee)) ? -1 : 1;
            }
            s->end_sent = 1;
            if (s->mode == CT_MODE_AUDIO) {
                if (!s->header_done && s->fmt == CT_RESP_WAV) { /* no audio at all: still a WAV */
                    if (pend_reserve(s, 44)) return -1;
                    wav_header((unsigned char *)s->pend, rate, 0);
                    s->pn = 44;
                    return 1;
                }
                return 0;
            }
            return pend_event(s, json_pack("{s:s, s:o}", "type", "speech.audio.done", "usage", usage_json(&ji)))
                       ? -1
                       : 1;
        }
        if (client_gone(h, s->c)) return -1;
    }
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    stream_ctx *s = cls;
    (void)pos;
    if (s->poff >= s->pn) {
        int r = stream_fill(s);
        if (r < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (r == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = s->pn - s->poff;
    if (n > max) n = max;
    memcpy(buf, s->pend + s->poff, n);
    s->poff += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_ctx *s = cls;
    ct_job_release(s->job);
    free(s->pend);
    free(s->tmp);
    free(s);
}

/* ---- /v1/audio/speech ------------------------------------------------------------------- */

static enum MHD_Result speech(ct_http *h, struct MHD_Connection *c, conn_ctx *cc) {
    ct_api_error e;
    ct_speech_ctx sx = {h->model_id, h->voices, h->n_voices, h->langs, h->n_langs, h->p.max_input_chars,
                        ct_srv_engine_get_limits(h->e).max_context};
    ct_speech_request rq;
    if (ct_speech_request_parse(cc->body ? cc->body : "", cc->n, &sx, &rq, &e) != CT_OK)
        return send_error(h, c, &e, NULL);
    ct_gen_params g = ct_gen_params_default();
    g.text = rq.input;
    g.speaker = rq.voice[0] ? rq.voice : NULL;
    g.language = rq.language;
    g.instruct = rq.instructions;
    g.non_streaming = rq.non_streaming;
    if (rq.has_seed) g.seed = rq.seed;
    else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g.seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
    }
    if (rq.max_new_tokens > 0) g.max_new_tokens = rq.max_new_tokens;
    if (rq.temperature == 0.0f) g.greedy = 1;
    else if (rq.temperature > 0) g.temperature = rq.temperature;
    if (rq.top_p > 0) g.top_p = rq.top_p;
    if (rq.top_k >= 0) g.top_k = rq.top_k;
    if (rq.repetition_penalty > 0) g.repetition_penalty = rq.repetition_penalty;
    int ic = rq.initial_chunk_frames >= 0 ? rq.initial_chunk_frames : h->p.default_initial_frames;
    ct_job *job = NULL;
    int retry = 1;
    ct_status st = ct_srv_engine_submit(h->e, &g, ic, &job, &retry);
    ct_resp_mode mode = rq.mode;
    ct_resp_format fmt = rq.format;
    ct_speech_request_free(&rq);
    if (st == CT_ERR_LIMIT) {
        char ra[32];
        snprintf(ra, sizeof ra, "%d", retry);
        const char *hd[] = {MHD_HTTP_HEADER_RETRY_AFTER, ra, NULL};
        ct_api_error_set(&e, 503, "server_error", NULL, "server_busy",
                         "all %d stream slots are busy and the queue (%d) is full; retry after %d s",
                         ct_srv_engine_get_limits(h->e).max_streams, ct_srv_engine_get_limits(h->e).queue_cap, retry);
        return send_error(h, c, &e, hd);
    }
    if (st != CT_OK) return send_err(h, c, 503, "server_error", NULL, "not_ready", "the engine is not serving");
    /* wait for admission + prefill (the queue), watching the client */
    ct_job_state js;
    while ((js = ct_job_wait_started(job, POLL_MS * 5)) < CT_JOB_RUNNING) {
        if (client_gone(h, c)) {
            ct_job_release(job);
            return MHD_NO;
        }
    }
    ct_job_info_t ji = ct_job_info(job);
    if (js == CT_JOB_FAILED) {
        int code = ji.status == CT_ERR_INVALID_ARG || ji.status == CT_ERR_LIMIT ? 400 : 500;
        ct_job_release(job);
        return send_err(h, c, code, code == 400 ? "invalid_request_error" : "server_error", NULL,
                        code == 400 ? "invalid_request" : "generation_failed", ji.err);
    }
    int rate = ct_srv_engine_get_limits(h->e).sample_rate;
    if (mode == CT_MODE_FULL) {
        size_t cap = (size_t)rate * 2, n = 0;
        int16_t *pcm = malloc(cap * sizeof *pcm);
        int finished = 0;
        while (pcm && !finished) {
            if (n + READ_SAMPLES > cap) {
                int16_t *np = realloc(pcm, 2 * cap * sizeof *pcm);
                if (!np) {
                    free(pcm);
                    pcm = NULL;
                    break;
                }
                pcm = np;
                cap *= 2;
            }
            size_t got = ct_job_read(job, pcm + n, READ_SAMPLES, POLL_MS * 5, &finished);
            n += got;
            if (!got && !finished) {
                if (ct_job_info(job).state == CT_JOB_FAILED) break;
                if (client_gone(h, c)) {
                    free(pcm);
                    ct_job_release(job);
                    return MHD_NO;
                }
            }
        }
        ji = ct_job_info(job);
        ct_job_release(job);
        if (!pcm) return send_err(h, c, 500, "server_error", NULL, NULL, "out of memory");
        if (ji.state == CT_JOB_FAILED) {
            free(pcm);
            return send_err(h, c, 500, "server_error", NULL, "generation_failed", ji.err);
        }
        size_t off = fmt == CT_RESP_WAV ? 44 : 0;
        unsigned char *out = malloc(off + n * 2 + 1);
        if (!out) {
            free(pcm);
            return send_err(h, c, 500, "server_error", NULL, NULL, "out of memory");
        }
        if (off) wav_header(out, rate, n);
        s16le(out + off, pcm, n);
        free(pcm);
        char it[24], ot[24], tt[24], as[32];
        snprintf(it, sizeof it, "%d", ji.text_tokens);
        snprintf(ot, sizeof ot, "%d", ji.frames);
        snprintf(tt, sizeof tt, "%d", ji.text_tokens + ji.frames);
        snprintf(as, sizeof as, "%.3f", (double)n / rate);
        const char *hd[] = {"x-codectalk-input-tokens", it, "x-codectalk-output-tokens", ot,
                            "x-codectalk-total-tokens", tt, "x-codectalk-audio-seconds", as,
                            "x-codectalk-stop-reason", ct_stop_reason_str(ji.stop), NULL};
        return send_buf(h, c, 200, fmt == CT_RESP_WAV ? "audio/wav" : "audio/pcm", (char *)out, off + n * 2, hd);
    }
    stream_ctx *s = calloc(1, sizeof *s);
    if (s) s->tmp = malloc(READ_SAMPLES * sizeof(int16_t));
    if (!s || !s->tmp) {
        if (s) free(s);
        ct_job_release(job);
        return send_err(h, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    s->h = h;
    s->c = c;
    s->job = job;
    s->mode = mode;
    s->fmt = fmt;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader, s,
                                                               stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    const char *ctype = mode == CT_MODE_SSE ? "text/event-stream"
                        : fmt == CT_RESP_WAV ? "audio/wav"
                                             : "audio/pcm";
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if (fmt == CT_RESP_PCM) {
        char sr[16];
        snprintf(sr, sizeof sr, "%d", rate);
        MHD_add_response_header(r, "x-codectalk-sample-rate", sr);
    }
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    count_status(h, 200);
    return ret;
}

/* ---- other routes ----------------------------------------------------------------------- */

static enum MHD_Result metrics(ct_http *h, struct MHD_Connection *c) {
    char *t = ct_srv_engine_metrics_text(h->e);
    if (!t) return MHD_NO;
    size_t n = strlen(t), cap = n + 2048;
    char *b = realloc(t, cap);
    if (!b) {
        free(t);
        return MHD_NO;
    }
    n += (size_t)snprintf(b + n, cap - n, "# HELP codectalk_http_responses_total HTTP responses by status\n"
                                          "# TYPE codectalk_http_responses_total counter\n");
    for (int i = 0; i < ST_N; i++) {
        unsigned long long v = atomic_load(&h->status_count[i]);
        if (i == ST_OTHER)
            n += (size_t)snprintf(b + n, cap - n, "codectalk_http_responses_total{code=\"other\"} %llu\n", v);
        else
            n += (size_t)snprintf(b + n, cap - n, "codectalk_http_responses_total{code=\"%d\"} %llu\n", ST_CODES[i], v);
    }
    return send_buf(h, c, 200, "text/plain; version=0.0.4", b, n, NULL);
}

static int auth_ok(ct_http *h, struct MHD_Connection *c) {
    if (!h->api_key[0]) return 1;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncasecmp(a, "Bearer ", 7) != 0) return 0;
    a += 7;
    while (*a == ' ') a++;
    size_t n = strlen(a), k = strlen(h->api_key);
    unsigned diff = (unsigned)(n ^ k);
    for (size_t i = 0; i < k; i++) diff |= (unsigned)(unsigned char)h->api_key[i] ^ (unsigned char)(i < n ? a[i] : 0);
    return diff == 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size,
                               void **con_cls) {
    ct_http *h = cls;
    (void)version;
    conn_ctx *cc = *con_cls;
    if (cc) { /* body of POST /v1/audio/speech */
        if (*upload_data_size) {
            if (!cc->too_big && cc->n + *upload_data_size <= h->p.max_body_bytes) {
                if (cc->n + *upload_data_size + 1 > cc->cap) {
                    size_t nc = (cc->n + *upload_data_size + 1) * 2;
                    if (nc > h->p.max_body_bytes + 1) nc = h->p.max_body_bytes + 1;
                    char *nb = realloc(cc->body, nc);
                    if (!nb) return MHD_NO;
                    cc->body = nb;
                    cc->cap = nc;
                }
                memcpy(cc->body + cc->n, upload_data, *upload_data_size);
                cc->n += *upload_data_size;
            } else {
                cc->too_big = 1;
            }
            *upload_data_size = 0;
            return MHD_YES;
        }
        if (cc->too_big) {
            char m[96];
            snprintf(m, sizeof m, "request body exceeds %zu bytes", h->p.max_body_bytes);
            return send_err(h, c, 413, "invalid_request_error", NULL, "body_too_large", m);
        }
        return speech(h, c, cc);
    }
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int is_post = strcmp(method, "POST") == 0;
    if (strcmp(url, "/health") == 0) {
        if (!is_get) goto method;
        int r = ct_srv_engine_ready(h->e, NULL, 0);
        return send_text(h, c, r > 0 ? 200 : 503, "application/json",
                         r > 0 ? "{\"status\":\"ok\"}" : r == 0 ? "{\"status\":\"warming_up\"}" : "{\"status\":\"failed\"}",
                         NULL);
    }
    int known = !strcmp(url, "/v1/audio/speech") || !strcmp(url, "/v1/models") || !strcmp(url, "/metrics") ||
                !strcmp(url, "/v1/audio/voices");
    if (!known) {
        char m[160];
        snprintf(m, sizeof m, "no route for %.100s", url);
        return send_err(h, c, 404, "invalid_request_error", NULL, "not_found", m);
    }
    if (!auth_ok(h, c))
        return send_err(h, c, 401, "authentication_error", NULL, "invalid_api_key",
                        "missing or invalid API key (send Authorization: Bearer <key>)");
    if (strcmp(url, "/v1/audio/speech") == 0) {
        if (!is_post) goto method;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > h->p.max_body_bytes) {
            char m[96];
            snprintf(m, sizeof m, "request body exceeds %zu bytes", h->p.max_body_bytes);
            return send_err(h, c, 413, "invalid_request_error", NULL, "body_too_large", m);
        }
        cc = calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        cc->is_speech = 1;
        *con_cls = cc;
        return MHD_YES;
    }
    if (!is_get) goto method;
    if (strcmp(url, "/metrics") == 0) return metrics(h, c);
    if (strcmp(url, "/v1/models") == 0)
        return send_json(h, c, 200,
                         json_pack("{s:s, s:[{s:s, s:s, s:i, s:s}]}", "object", "list", "data", "id", h->model_id,
                                   "object", "model", "created", 0, "owned_by", "codectalk"));
    {
        json_t *v = json_array();
        for (int i = 0; i < h->n_voices; i++) json_array_append_new(v, json_string(h->voices[i]));
        return send_json(h, c, 200, json_pack("{s:o}", "voices", v));
    }
method: {
    const char *allow = strcmp(url, "/v1/audio/speech") == 0 ? "POST" : "GET, HEAD";
    const char *hd[] = {MHD_HTTP_HEADER_ALLOW, allow, NULL};
    ct_api_error e;
    ct_api_error_set(&e, 405, "invalid_request_error", NULL, "method_not_allowed", "%s is not allowed on %.100s (allowed: %s)",
                     method, url, allow);
    return send_error(h, c, &e, hd);
}
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t) {
    (void)cls, (void)c, (void)t;
    conn_ctx *cc = *con_cls;
    if (cc) {
        free(cc->body);
        free(cc);
        *con_cls = NULL;
    }
}

ct_status ct_http_start(ct_srv_engine *e, const ct_model *m, const ct_http_params *p, ct_http **out, char *err,
                        size_t errcap) {
    if (out) *out = NULL;
    if (!e || !m || !p || !out || !p->model_id)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: NULL argument (engine, model, params, model_id)");
    if (p->port < 0 || p->port > 65535)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: port %d not in [0, 65535]", p->port);
    ct_http *h = calloc(1, sizeof *h);
    if (!h) return ct_errf(err, errcap, CT_ERR_NOMEM, "http: out of memory");
    h->e = e;
    h->m = m;
    h->p = *p;
    snprintf(h->host, sizeof h->host, "%s", p->host ? p->host : "127.0.0.1");
    snprintf(h->model_id, sizeof h->model_id, "%s", p->model_id);
    snprintf(h->api_key, sizeof h->api_key, "%s", p->api_key ? p->api_key : "");
    if (h->p.max_connections <= 0) h->p.max_connections = 64;
    if (h->p.connection_timeout_s <= 0) h->p.connection_timeout_s = 30;
    if (!h->p.max_body_bytes) h->p.max_body_bytes = 65536;
    h->p.host = h->host;
    h->p.model_id = h->model_id;
    h->p.api_key = h->api_key;
    ct_model_info mi = ct_model_get_info(m);
    for (int i = 0; i < mi.n_speakers && h->n_voices < 256; i++)
        if (ct_model_speaker(m, i)) h->voices[h->n_voices++] = ct_model_speaker(m, i);
    for (int i = 0; i < mi.n_languages && h->n_langs < 256; i++)
        if (ct_model_language(m, i)) h->langs[h->n_langs++] = ct_model_language(m, i);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p->port);
    if (inet_pton(AF_INET, h->host, &sa.sin_addr) != 1) {
        free(h);
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: host '%s' is not a numeric IPv4 address", p->host);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0) {
        int en = errno;
        if (fd >= 0) close(fd);
        free(h);
        return ct_errf(err, errcap, CT_ERR_IO, "http: cannot listen on %s:%d: %s", p->host, p->port, strerror(en));
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    h->port = ntohs(sa.sin_port);
    h->listen_fd = fd;
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL,
                            NULL, handler, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)h->p.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)h->p.connection_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024), MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        free(h);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "http: libmicrohttpd failed to start");
    }
    *out = h;
    return CT_OK;
}

int ct_http_port(const ct_http *h) { return h ? h->port : 0; }

void ct_http_stop(ct_http *h) {
    if (!h) return;
    atomic_store(&h->stopping, 1);
    MHD_stop_daemon(h->d); /* also closes the listening socket it was given */
    free(h);
}
