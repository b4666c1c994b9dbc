/* HTTP front end (see http.h): routing, auth, body limits and the three response modes of
   /v1/audio/speech over the public stream engine. Connection threads block on their own stream
   only; disconnects are detected by polling the socket while waiting. */
#define _GNU_SOURCE
#include "serve/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "audio/encode.h"
#include "audio/pcm.h"
#include "audio/speed.h"
#include "audio/wav.h"
#include "core/clock.h"
#include "core/stepstats.h"
#include "serve/codes_wire.h"
#include "serve/gate.h"
#include "serve/listen.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "text/normalize.h"
#include "text/sentences.h"

#define READ_SAMPLES (8 * 1920) /* samples per streamed piece at most */
#define READ_FRAMES 32          /* code frames per streamed piece at most */
#define STR_CAP (4 * READ_SAMPLES + 4096) /* samples one time-stretch pull gives at most (0.25x) */
#define POLL_MS 20              /* wait granularity for disconnect checks */
#define HDR CT_WAV_HEADER_BYTES

struct ct_http {
    struct MHD_Daemon *d;
    ct_gate *g;
    ct_engine *e;
    const ct_model *m;
    ct_http_params p;
    char host[64], model_id[128], api_key[256], schedule[128], cors[256];
    ct_stream_params stream; /* p.stream copied */
    const char *voices[256], *langs[256];
    int n_voices, n_langs;
    char alias_buf[2048];                  /* the alias strings below point into it */
    const char *model_aliases[32];         /* [n_model_aliases] */
    int n_model_aliases;
    const char *voice_aliases[64], *voice_targets[64]; /* [n_voice_aliases] alias -> a voice */
    int n_voice_aliases;
    int port, rate, max_chunk;
    int clone;                 /* a Base model: cloned voices and the clone fields */
    ct_codes_header codes_hdr; /* the header record of every codes stream */
    atomic_int stopping;
    ct_srv_metrics mx;
};

typedef struct {
    int is_speech;
    int is_upload;       /* POST /v1/audio/voices */
    char *body;
    size_t n, cap;
    int too_big;
    size_t discarded;    /* body bytes of requests other than speech */
    ct_gate_conn *k;     /* the connection's record in the gate */
    /* the access-log line: what was asked, what went back */
    char method[8], path[96];
    double t0_ms;
    int status;
    uint64_t bytes;
    double audio_s, ttfa_ms, rtf; /* audio requests; audio_s < 0 = none */
    struct stream_ctx *sc; /* its streamed body while that lives */
} conn_ctx;

/* The request the connection's thread is handling (MHD runs a connection's handler, body
   reader and completion on one thread). */
static _Thread_local conn_ctx *tl_cc;

typedef struct stream_ctx {
    ct_http *h;
    struct MHD_Connection *c;
    conn_ctx *cc;        /* the request's log record, NULL once the request completed */
    ct_stream *st;
    ct_gate_conn *k;
    ct_resp_mode mode;
    ct_resp_format fmt;
    int header_done, end_sent;
    char *pend;          /* bytes ready to hand to MHD */
    size_t pn, poff, pcap;
    float *tmp;          /* [READ_SAMPLES] */
    unsigned char *raw;  /* [HDR + 2 * STR_CAP] one piece as bytes (audio or code records) */
    int af;              /* ct_audio_format of an audio body */
    ct_audio_enc *enc;   /* mp3 / opus / aac / flac: the encoder (bytes land in eb) */
    unsigned char *eb;   /* [ebcap] encoded bytes not handed on yet */
    size_t ebn, ebcap;
    ct_speed *spd;       /* speed != 1: the time-stretch */
    float *str;          /* [STR_CAP] stretched samples */
    int flushed;         /* the stretch and the encoder were drained */
    int32_t *codes;      /* [READ_FRAMES * n_groups] codes streams */
    uint32_t frames;     /* code frames sent so far */
    /* codes requests: one engine stream per utterance (the engine's split and seed + k rule),
       so that the utterance boundaries the decoder resets at are on the wire (CODES_WIRE.md) */
    ct_speech_request rq; /* owned */
    ct_span *utts;
    char *utt_text;      /* utterance utt of rq.input, NUL-terminated */
    int n_utts, utt;
    double t_submit;     /* ct_now_ms() at the first utterance's submission (the request's deadline) */
    ct_stream_info sum;  /* text_tokens, frames of the utterance streams so far; stop of the last */
    int failed;          /* the codes stream ended with an error record (fail_msg, fail_status) */
    ct_status fail_status;
    char fail_msg[600];
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
    p.header_timeout_s = 10;
    p.write_timeout_s = 20;
    p.max_conn_per_ip = 32;
    p.reserve_connections = 4;
    p.max_upload_bytes = 32u << 20;
    return p;
}

/* ---- responses ---------------------------------------------------------------------------- */

/* --cors ORIGIN: browsers on that origin may read every answer. */
static void cors_headers(const ct_http *h, struct MHD_Response *r) {
    if (!h->cors[0]) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", h->cors);
    MHD_add_response_header(r, "Access-Control-Expose-Headers", "Retry-After, x-codectalk-sample-rate, "
                            "x-codectalk-audio-seconds, x-codectalk-stop-reason");
    if (strcmp(h->cors, "*") != 0) MHD_add_response_header(r, "Vary", "Origin");
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
    cors_headers(h, r);
    if (ct_gate_conn_is_reserve(ct_gate_conn_of(c))) /* a reserve connection serves one request */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, r);
    MHD_destroy_response(r);
    ct_srv_metrics_status(&h->mx, code);
    if (tl_cc) {
        tl_cc->status = code;
        tl_cc->bytes += n;
    }
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

static int ct_hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static json_t *usage_json(const ct_stream_info *si) {
    return json_pack("{s:i, s:i, s:i, s:{s:i, s:i}}", "input_tokens", si->text_tokens, "output_tokens",
                     si->frames, "total_tokens", si->text_tokens + si->frames, "input_token_details",
                     "text_tokens", si->text_tokens, "audio_tokens", 0);
}

/* The server is done with stream st: its facts go to the histograms, then it is released
   (cancelled if still running). */
static void stream_done(ct_http *h, ct_stream *st) {
    ct_stream_info si = ct_stream_get_info(st);
    ct_srv_metrics_stream(&h->mx, &si, h->rate);
    ct_stream_release(st);
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

/* n bytes as the next piece: as they are (a chunked body) or one SSE event of `type` carrying
   them in base64 under `field` (with response_format when fmt is not NULL). */
static int pend_piece(stream_ctx *s, const unsigned char *b, size_t n, const char *type, const char *field,
                      const char *fmt) {
    if (n == 0) return 0;
    if (s->mode == CT_MODE_AUDIO) {
        if (pend_reserve(s, n)) return -1;
        memcpy(s->pend + s->pn, b, n);
        s->pn += n;
        return 0;
    }
    char *enc = malloc((n + 2) / 3 * 4 + 1);
    if (!enc) return -1;
    enc[ct_b64_encode(enc, b, n)] = 0;
    json_t *ev = json_pack("{s:s, s:s}", "type", type, field, enc);
    if (ev && fmt) json_object_set_new(ev, "response_format", json_string(fmt));
    int r = pend_event(s, ev);
    free(enc);
    return r;
}

/* audio body bytes: speech.audio.delta events under SSE */
static int pend_bytes(stream_ctx *s, const unsigned char *b, size_t n) {
    return pend_piece(s, b, n, "speech.audio.delta", "audio", ct_audio_format_name(s->af));
}

/* n samples as WAV/PCM bytes (after the streaming WAV header the first time) or through the
   encoder, into the pending piece. */
static int pend_samples(stream_ctx *s, const float *x, size_t n, int last) {
    if (s->enc) {
        char m[256];
        if (n && ct_audio_enc_write(s->enc, x, n, m, sizeof m) != CT_OK) return -1;
        if (last && ct_audio_enc_finish(s->enc, m, sizeof m) != CT_OK) return -1;
        int r = pend_bytes(s, s->eb, s->ebn);
        s->ebn = 0;
        return r;
    }
    size_t off = 0;
    if (!s->header_done && s->fmt == CT_RESP_WAV) {
        ct_wav_header(s->raw, s->h->rate, CT_WAV_PCM16, CT_WAV_STREAMING);
        off = HDR;
    }
    if (!n && !off) return 0;
    s->header_done = 1;
    ct_pcm_s16le(s->raw + off, x, n);
    return pend_bytes(s, s->raw, off + 2 * n);
}

/* n samples of s->tmp through the time-stretch (speed != 1) into the pending piece; last = the
   stream ended: drain the stretch and the encoder. The piece may stay empty (the encoder
   holds less than a codec frame). */
static int pend_audio(stream_ctx *s, size_t n, int last) {
    if (last) s->flushed = 1;
    if (!s->spd) return pend_samples(s, s->tmp, n, last);
    char m[256];
    size_t got = 0, in = n;
    do {
        if (ct_speed_run(s->spd, s->tmp, in, last, s->str, STR_CAP, &got, m, sizeof m) != CT_OK) return -1;
        in = 0;
        if (pend_samples(s, s->str, got, last && got < STR_CAP)) return -1;
    } while (got == STR_CAP);
    return 0;
}

/* an encoder sink: the bytes wait in s->eb until the piece is handed on */
static int enc_sink(void *ud, const uint8_t *b, size_t n) {
    stream_ctx *s = ud;
    if (s->ebn + n > s->ebcap) {
        size_t c = (s->ebn + n) * 2;
        unsigned char *nb = realloc(s->eb, c);
        if (!nb) return -1;
        s->eb = nb;
        s->ebcap = c;
    }
    memcpy(s->eb + s->ebn, b, n);
    s->ebn += n;
    return 0;
}

/* Bytes of the codes wire format (docs/CODES_WIRE.md): speech.codes.delta events under SSE. */
static int pend_wire(stream_ctx *s, const unsigned char *b, size_t n) {
    return pend_piece(s, b, n, "speech.codes.delta", "codes", NULL);
}

/* nf frames of s->codes as frame records (after the header record the first time). */
static int pend_codes(stream_ctx *s, size_t nf) {
    const ct_codes_header *ch = &s->h->codes_hdr;
    size_t off = 0, cap = HDR + 2 * READ_SAMPLES;
    if (!s->header_done) off = ct_codes_put_header(s->raw, cap, ch);
    s->header_done = 1;
    for (size_t i = 0; i < nf; i++) {
        size_t k = ct_codes_put_frame(s->raw + off, cap - off, s->frames, s->codes + i * (size_t)ch->n_groups,
                                      ch->n_groups);
        if (!k) return -1;
        off += k;
        s->frames++;
    }
    return pend_wire(s, s->raw, off);
}

/* The end of a codes stream: the end record (or an error record naming the failure), then for
   SSE the closing event; the request's totals go to s->sum. Returns 1 (something is pending)
   or -1. */
static int pend_codes_end(stream_ctx *s) {
    if (s->st) {
        ct_stream_info si = ct_stream_get_info(s->st);
        s->sum.text_tokens += si.text_tokens;
        s->sum.frames += si.frames;
        s->sum.stop = si.stop;
        if (si.state == CT_STREAM_FAILED && !s->failed) {
            s->failed = 1;
            s->fail_status = si.status;
            if (s->n_utts > 1)
                snprintf(s->fail_msg, sizeof s->fail_msg, "utterance %d: %s", s->utt + 1, ct_stream_errmsg(s->st));
            else snprintf(s->fail_msg, sizeof s->fail_msg, "%s", ct_stream_errmsg(s->st));
        }
    }
    size_t off = 0, cap = HDR + 2 * READ_SAMPLES;
    if (!s->header_done) off = ct_codes_put_header(s->raw, cap, &s->h->codes_hdr);
    s->header_done = 1;
    s->end_sent = 1;
    off += s->failed ? ct_codes_put_error(s->raw + off, cap - off, s->fail_msg)
                     : ct_codes_put_end(s->raw + off, cap - off, s->frames, (int)s->sum.stop);
    if (pend_wire(s, s->raw, off)) return -1;
    if (s->mode == CT_MODE_AUDIO) return 1;
    if (s->failed) {
        json_t *ee = json_pack("{s:s, s:s, s:o, s:s}", "message", s->fail_msg, "type", "server_error", "param",
                               json_null(), "code", "generation_failed");
        return pend_event(s, json_pack("{s:s, s:o}", "type", "speech.audio.error", "error", ee)) ? -1 : 1;
    }
    return pend_event(s, json_pack("{s:s, s:o}", "type", "speech.audio.done", "usage", usage_json(&s->sum))) ? -1 : 1;
}

/* The end of the stream: the closing event (done or error), or for a raw WAV stream without
   any audio its header. Returns 1 when something is pending, 0 when nothing is left, -1 to cut
   the body short (a raw stream whose generation failed). */
/* The audio facts of a finished stream into the request's log record. */
static void log_audio(conn_ctx *cc, const ct_stream_info *si, int rate) {
    if (!cc || rate <= 0) return;
    cc->audio_s = (double)si->samples / rate;
    cc->ttfa_ms = si->ttfa_ms;
    cc->rtf = cc->audio_s > 0 ? (si->done_ms - si->queue_ms) / 1e3 / cc->audio_s : 0;
}

static int pend_end(stream_ctx *s) {
    ct_stream_info si = ct_stream_get_info(s->st);
    s->end_sent = 1;
    log_audio(s->cc, &si, s->h->rate);
    if (si.state == CT_STREAM_FAILED) {
        if (s->mode == CT_MODE_AUDIO) return -1; /* truncated body: the client sees an error */
        json_t *ee = json_pack("{s:s, s:s, s:o, s:s}", "message", ct_stream_errmsg(s->st), "type", "server_error",
                               "param", json_null(), "code", "generation_failed");
        return pend_event(s, json_pack("{s:s, s:o}", "type", "speech.audio.error", "error", ee)) ? -1 : 1;
    }
    if (s->mode == CT_MODE_SSE)
        return pend_event(s, json_pack("{s:s, s:o}", "type", "speech.audio.done", "usage", usage_json(&si))) ? -1 : 1;
    if (s->header_done || s->fmt != CT_RESP_WAV) return 0;
    if (pend_reserve(s, HDR)) return -1; /* no audio at all: still a WAV */
    ct_wav_header((unsigned char *)s->pend, s->h->rate, CT_WAV_PCM16, 0);
    s->pn = HDR;
    return 1;
}

static int codes_next(stream_ctx *s);

/* Fills s->pend with the next piece; returns 1 when something is pending, 0 at the end of
   the stream, -1 to abort the connection. */
static int stream_fill(stream_ctx *s) {
    s->pn = s->poff = 0;
    while (!s->end_sent) {
        int finished = 0;
        if (s->fmt == CT_RESP_CODES) {
            size_t nf = ct_stream_read_codes(s->st, s->codes, READ_FRAMES, POLL_MS, &finished);
            if (nf > 0) return pend_codes(s, nf) ? -1 : 1;
            if (finished) {
                int r = codes_next(s);
                return r ? r : pend_codes_end(s);
            }
            if (client_gone(s->h, s->c)) return -1;
            continue;
        }
        size_t n = ct_stream_read(s->st, s->tmp, READ_SAMPLES, POLL_MS, &finished);
        /* a failed stream is not finished off: no trailer, the body stays visibly cut */
        int drain = finished && !s->flushed && (s->spd || s->enc) && ct_stream_get_info(s->st).state != CT_STREAM_FAILED;
        if (n > 0 || drain) {
            if (pend_audio(s, n, drain)) return -1;
            if (s->pn > 0) return 1;
            if (!finished) continue;
        }
        if (finished) return pend_end(s);
        if (client_gone(s->h, s->c)) return -1;
    }
    return 0;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    stream_ctx *s = cls;
    (void)pos;
    ct_gate_stream_waiting(s->k, 0); /* the client took what we handed over */
    if (s->poff >= s->pn) {
        int r = stream_fill(s);
        if (r < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (r == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = s->pn - s->poff;
    if (n > max) n = max;
    memcpy(buf, s->pend + s->poff, n);
    s->poff += n;
    if (s->cc) s->cc->bytes += n;
    ct_gate_stream_waiting(s->k, 1); /* now the client owes us reading it (--write-timeout) */
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_ctx *s = cls;
    if (s->cc) s->cc->sc = NULL;
    if (s->st) {
        ct_gate_stream_detach(s->k, s->st);
        stream_done(s->h, s->st);
    }
    ct_speech_request_free(&s->rq);
    free(s->utts);
    free(s->utt_text);
    free(s->pend);
    free(s->tmp);
    free(s->raw);
    free(s->codes);
    ct_audio_enc_free(s->enc);
    free(s->eb);
    ct_speed_free(s->spd);
    free(s->str);
    free(s);
}

/* ---- /v1/audio/speech ------------------------------------------------------------------- */

/* Submits the parsed request; on CT_OK *out holds the stream. Otherwise *e says what to send
   (and *retry the Retry-After seconds of a 503 for a full queue). utt_text: NULL for the whole
   input (the engine splits it into utterances), else utterance utt of it alone (seed + utt, as
   the engine seeds utterance utt; codes requests), with deadline_ms left of the request's
   deadline for utt > 0 (the first-audio timeout applies to utterance 0 only). */
static ct_status submit(ct_http *h, const ct_speech_request *rq, const char *utt_text, int utt, int deadline_ms,
                        ct_stream **out, ct_api_error *e, int *retry) {
    ct_gen_params g = ct_gen_params_default();
    ct_speech_gen_params(rq, &g);
    if (!rq->has_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g.seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
    }
    char sched[64], msg[512];
    ct_stream_params sp = h->stream;
    sp.schedule = ct_speech_schedule(rq->initial_chunk_frames, h->p.codec_chunk, h->max_chunk,
                                     h->schedule[0] ? h->schedule : NULL, sched, sizeof sched);
    sp.output = rq->format == CT_RESP_CODES ? CT_OUTPUT_CODES : CT_OUTPUT_PCM; /* codes: no decoding here */
    if (rq->sentence_pause_ms >= 0) sp.sentence_pause_ms = rq->sentence_pause_ms;
    if (rq->paragraph_pause_ms >= 0) sp.paragraph_pause_ms = rq->paragraph_pause_ms;
    if (rq->normalize >= 0) sp.normalize = rq->normalize;
    if (sp.output == CT_OUTPUT_CODES) sp.sentence_pause_ms = sp.paragraph_pause_ms = 0; /* frames have no silence */
    if (utt_text) {
        g.text = utt_text;
        g.seed += (uint64_t)utt;
        sp.utterance_bytes = 0;
        sp.normalize = 0; /* codes_new normalised the whole input before splitting it */
        if (utt > 0) {
            sp.first_audio_timeout_ms = 0;
            if (sp.deadline_ms > 0) sp.deadline_ms = deadline_ms;
        }
    }
    ct_status st = ct_engine_submit(h->e, &g, &sp, out, msg, sizeof msg);
    if (st == CT_ERR_LIMIT) {
        ct_engine_limits l = ct_engine_get_limits(h->e);
        *retry = ct_engine_retry_after_s(h->e);
        ct_api_error_set(e, 503, "server_error", NULL, "server_busy",
                         "all %d stream slots are busy and the queue (%d) is full; retry after %d s", l.max_streams,
                         l.queue_cap, *retry);
    } else if (st == CT_ERR_INVALID_ARG) {
        ct_api_error_set(e, 400, "invalid_request_error", NULL, "invalid_request", "%s", msg);
    } else if (st == CT_ERR_STATE) {
        ct_api_error_set(e, 503, "server_error", NULL, "not_ready", "the engine is not serving");
    } else if (st != CT_OK) {
        ct_api_error_set(e, 500, "server_error", NULL, NULL, "%s", msg);
    }
    return st;
}

/* The whole clip in one response, with exact WAV sizes and the usage headers. */
/* A context for a streamed or collected body (st attached later): audio in format af (an
   encoder for mp3 / opus / aac / flac), at speed (1 = as generated); NULL when out of memory
   or the encoder cannot start (*why says which). */
static stream_ctx *stream_new(ct_http *h, struct MHD_Connection *c, ct_resp_mode mode, ct_resp_format fmt, int af,
                              float speed, char *why, size_t wcap) {
    stream_ctx *s = calloc(1, sizeof *s);
    snprintf(why, wcap, "out of memory");
    if (s) {
        s->tmp = malloc(sizeof(float) * READ_SAMPLES);
        s->raw = malloc(HDR + 2 * STR_CAP);
        s->codes = malloc(sizeof(int32_t) * READ_FRAMES * (size_t)h->codes_hdr.n_groups);
        s->af = af;
    }
    int ok = s && s->tmp && s->raw && s->codes;
    if (ok && fmt == CT_RESP_ENCODED) ok = ct_audio_enc_open(af, h->rate, enc_sink, s, &s->enc, why, wcap) == CT_OK;
    if (ok && speed != 1.0f)
        ok = (s->str = malloc(sizeof(float) * STR_CAP)) && ct_speed_create(h->rate, speed, &s->spd, why, wcap) == CT_OK;
    if (!ok) {
        if (s) stream_free(s);
        return NULL;
    }
    s->h = h;
    s->c = c;
    s->k = ct_gate_conn_of(c);
    s->mode = mode;
    s->fmt = fmt;
    s->rq.initial_chunk_frames = -1;
    s->rq.sentence_pause_ms = s->rq.paragraph_pause_ms = s->rq.normalize = -1;
    return s;
}

/* Waits for admission and the first prefill of st, watching the client: the state then, or -1
   when the client went away. */
static int wait_started(ct_http *h, struct MHD_Connection *c, ct_stream *st) {
    ct_stream_state js;
    while ((js = ct_stream_wait_started(st, POLL_MS * 5)) < CT_STREAM_RUNNING)
        if (client_gone(h, c)) return -1;
    return (int)js;
}

/* Utterance s->utt of s->rq.input into s->utt_text. */
static void codes_utt_text(stream_ctx *s) {
    const ct_span *u = &s->utts[s->utt];
    memcpy(s->utt_text, s->rq.input + u->off, u->len);
    s->utt_text[u->len] = 0;
}

/* A codes request (takes *rq): its utterances, by the server's utterance size, and a seed drawn
   now when it has none (utterance k uses seed + k). NULL on OOM (rq freed). */
static stream_ctx *codes_new(ct_http *h, struct MHD_Connection *c, ct_speech_request *rq) {
    char why[256];
    if (rq->normalize > 0 || (rq->normalize < 0 && h->stream.normalize)) { /* the engine's order: normalise, split */
        char *nt = NULL;
        if (ct_normalize(rq->input, strlen(rq->input), rq->language, &nt, why, sizeof why) != CT_OK) {
            ct_speech_request_free(rq);
            return NULL;
        }
        free(rq->input);
        rq->input = nt;
    }
    stream_ctx *s = stream_new(h, c, rq->mode == CT_MODE_FULL ? CT_MODE_AUDIO : rq->mode, CT_RESP_CODES, CT_AF_WAV, 1.0f,
                               why, sizeof why);
    size_t len = strlen(rq->input);
    size_t max = h->stream.utterance_bytes > 0 ? (size_t)h->stream.utterance_bytes : len + 1; /* 0: one utterance */
    size_t ns = ct_split_utterances(rq->input, len, max, NULL, 0);
    if (s) {
        s->rq = *rq;
        memset(rq, 0, sizeof *rq);
        s->utts = malloc(sizeof(ct_span) * (ns ? ns : 1));
        s->utt_text = malloc(len + 1);
    }
    if (!s || !s->utts || !s->utt_text) {
        if (s) stream_free(s);
        else ct_speech_request_free(rq);
        return NULL;
    }
    s->n_utts = (int)ct_split_utterances(s->rq.input, len, max, s->utts, ns);
    if (s->n_utts < 1) { /* whitespace only was refused by the parser; keep the engine's message path */
        s->n_utts = 1;
        s->utts[0] = (ct_span){0, len, 0};
    }
    if (!s->rq.has_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s->rq.seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
        s->rq.has_seed = 1;
    }
    codes_utt_text(s);
    return s;
}

/* The utterance stream of a codes request finished: when it went well and another utterance
   follows, it is released and the next one submitted and started, and an utterance record is
   pending (1). 0: nothing follows (or the next could not start: s->failed); -1: the client went
   away or out of memory. */
static int codes_next(stream_ctx *s) {
    ct_stream_info si = ct_stream_get_info(s->st);
    if (si.state == CT_STREAM_FAILED || s->utt + 1 >= s->n_utts) return 0;
    s->sum.text_tokens += si.text_tokens;
    s->sum.frames += si.frames;
    ct_gate_stream_detach(s->k, s->st);
    stream_done(s->h, s->st);
    s->st = NULL;
    s->utt++;
    codes_utt_text(s);
    ct_api_error e;
    int retry = 1;
    ct_stream *st = NULL;
    int deadline = s->h->stream.deadline_ms, left = deadline - (int)(ct_now_ms() - s->t_submit);
    ct_status ss = deadline > 0 && left < 1
                       ? ct_errf(e.message, sizeof e.message, CT_ERR_TIMEOUT, "the request's deadline (%d ms) passed",
                                 deadline)
                       : submit(s->h, &s->rq, s->utt_text, s->utt, left, &st, &e, &retry);
    if (ss != CT_OK) {
        s->failed = 1;
        s->fail_status = ss;
        snprintf(s->fail_msg, sizeof s->fail_msg, "utterance %d: %s", s->utt + 1, e.message);
        return 0;
    }
    s->st = st;
    ct_gate_stream_attach(s->k, st);
    if (wait_started(s->h, s->c, st) < 0) return -1;
    size_t n = ct_codes_put_utterance(s->raw, HDR + 2 * READ_SAMPLES, (uint32_t)s->utt);
    return pend_wire(s, s->raw, n) ? -1 : 1;
}

/* The whole codes stream in one response (docs/CODES_WIRE.md), with the usage headers (summed
   over the utterances). */
static enum MHD_Result speech_full_codes(ct_http *h, struct MHD_Connection *c, stream_ctx *s) {
    unsigned char *out = NULL;
    size_t len = 0, cap = 0;
    int r;
    while ((r = stream_fill(s)) > 0) {
        if (len + s->pn > cap) {
            size_t nc = (len + s->pn) * 2 + 4096;
            unsigned char *no = realloc(out, nc);
            if (!no) {
                r = -2;
                break;
            }
            out = no;
            cap = nc;
        }
        memcpy(out + len, s->pend, s->pn);
        len += s->pn;
    }
    ct_api_error e;
    if (r < 0 && client_gone(h, c)) {
        free(out);
        stream_free(s);
        return MHD_NO;
    }
    if (r < 0) ct_api_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    else if (s->failed && s->fail_status == CT_ERR_TIMEOUT) /* a deadline of the profile, as for audio */
        ct_api_error_set(&e, 504, "server_error", NULL, "timeout", "%s", s->fail_msg);
    else if (s->failed) ct_api_error_set(&e, 500, "server_error", NULL, "generation_failed", "%s", s->fail_msg);
    ct_stream_info si = s->sum;
    uint32_t frames = s->frames;
    int bad = r < 0 || s->failed;
    stream_free(s);
    if (bad) {
        free(out);
        return send_error(h, c, &e, NULL);
    }
    const ct_codes_header *ch = &h->codes_hdr;
    char it[24], ot[24], tt[24], as[32];
    snprintf(it, sizeof it, "%d", si.text_tokens);
    snprintf(ot, sizeof ot, "%d", si.frames);
    snprintf(tt, sizeof tt, "%d", si.text_tokens + si.frames);
    snprintf(as, sizeof as, "%.3f", (double)frames * ch->samples_per_frame / ch->sample_rate);
    const char *hd[] = {"x-codectalk-input-tokens", it, "x-codectalk-output-tokens", ot,
                        "x-codectalk-total-tokens", tt, "x-codectalk-audio-seconds", as,
                        "x-codectalk-stop-reason", ct_stop_reason_str(si.stop), NULL};
    return send_buf(h, c, 200, CT_CODES_CONTENT_TYPE, (char *)out, len, hd);
}

/* Hands s (its stream attached) to the library as a chunked body. */
static enum MHD_Result queue_stream(ct_http *h, struct MHD_Connection *c, stream_ctx *s) {
    {   /* a small send buffer, so a client that stops reading is seen within --write-timeout */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        int sb = 64 * 1024;
        if (ci) setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader, s,
                                                               stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    const char *ctype = s->mode == CT_MODE_SSE    ? "text/event-stream"
                        : s->fmt == CT_RESP_CODES ? CT_CODES_CONTENT_TYPE
                                                  : ct_audio_format_mime(s->af);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    cors_headers(h, r);
    if (s->fmt == CT_RESP_PCM) {
        char sr[16];
        snprintf(sr, sizeof sr, "%d", h->rate);
        MHD_add_response_header(r, "x-codectalk-sample-rate", sr);
    }
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    ct_srv_metrics_status(&h->mx, 200);
    if (tl_cc) {
        tl_cc->status = 200;
        tl_cc->sc = s;
        s->cc = tl_cc;
    }
    return ret;
}

/* The cloned voice of a speech request into rq->cloned: an uploaded voice by name, or a
   one-off clone of ref_audio (made for this request, not stored). 0, or -1 with *e set. */
static int resolve_clone(ct_http *h, ct_speech_request *rq, ct_api_error *e) {
    char err[1024];
    ct_status st;
    if (rq->ref_audio) {
        ct_ref_audio a;
        ct_clone_warnings w;
        st = ct_ref_audio_load_memory(rq->ref_audio, rq->ref_audio_len, "ref_audio", &a, err, sizeof err);
        if (st == CT_OK) {
            st = ct_clone_make(h->m, h->p.encoder, &a, rq->ref_text, rq->x_vector_only, &rq->cloned, &w, err, sizeof err);
            ct_ref_audio_free(&a);
        }
        if (st == CT_OK) return 0;
        int tx = strstr(err, "transcript") != NULL; /* the transcript rules, else the clip's */
        ct_api_error_set(e, st == CT_ERR_NOMEM ? 500 : 400, st == CT_ERR_NOMEM ? "server_error" : "invalid_request_error",
                         tx ? "ref_text" : "ref_audio", st == CT_ERR_NOMEM ? NULL : tx ? "invalid_value" : "invalid_audio",
                         "%s", err);
        return -1;
    }
    if (!h->p.voices) {
        ct_api_error_set(e, 400, "invalid_request_error", "voice", "unknown_voice",
                         "unknown voice '%s': this server keeps no uploaded voices (--voices-dir); a Base model "
                         "clones from ref_audio", rq->clone_voice);
        return -1;
    }
    st = ct_voice_store_get(h->p.voices, h->m, rq->clone_voice, &rq->cloned, err, sizeof err);
    if (st == CT_OK) return 0;
    ct_api_error_set(e, st == CT_ERR_NOMEM ? 500 : 400, st == CT_ERR_NOMEM ? "server_error" : "invalid_request_error",
                     "voice", st == CT_ERR_NOMEM ? NULL : "unknown_voice", "%s%s", err,
                     st == CT_ERR_IO ? " (GET /v1/audio/voices lists the uploaded voices)" : "");
    return -1;
}

void ct_http_shared(const ct_http *h, ct_speech_ctx *sx, ct_stream_params *sp, const char **schedule,
                    const char **api_key) {
    *sx = (ct_speech_ctx){h->model_id,      h->voices,        h->n_voices,
                                           h->langs,         h->n_langs,       h->p.max_input_chars,
                                           ct_engine_get_limits(h->e).max_context,
                                           h->model_aliases, h->n_model_aliases, h->voice_aliases,
                                           h->voice_targets, h->n_voice_aliases, 0};
    *sp = h->stream;
    *schedule = h->schedule[0] ? h->schedule : NULL;
    *api_key = h->api_key;
}

static enum MHD_Result speech(ct_http *h, struct MHD_Connection *c, conn_ctx *cc) {
    ct_stats_thread_role("serve");
    double t0 = CT_STATS_T0();
    ct_api_error e;
    ct_speech_ctx sx = {h->model_id,           h->voices,           h->n_voices,          h->langs,
                        h->n_langs,            h->p.max_input_chars, ct_engine_get_limits(h->e).max_context,
                        h->model_aliases,      h->n_model_aliases,   h->voice_aliases,     h->voice_targets,
                        h->n_voice_aliases,    h->clone};
    ct_speech_request rq;
    if (ct_speech_request_parse(cc->body ? cc->body : "", cc->n, &sx, &rq, &e) != CT_OK)
        return send_error(h, c, &e, NULL);
    if ((rq.ref_audio || rq.clone_voice[0]) && resolve_clone(h, &rq, &e) != 0) {
        ct_speech_request_free(&rq);
        return send_error(h, c, &e, NULL);
    }
    ct_resp_mode mode = rq.mode;
    ct_resp_format fmt = rq.format;
    int af = rq.audio_format;
    float speed = rq.speed;
    /* audio streams as it is made also without stream_format, as the OpenAI API streams plain
       requests (a WAV then carries the streaming header); codes may be collected whole */
    if (mode == CT_MODE_FULL && fmt != CT_RESP_CODES) mode = CT_MODE_AUDIO;
    stream_ctx *cs = NULL; /* codes: the context that submits utterance by utterance */
    if (fmt == CT_RESP_CODES && !(cs = codes_new(h, c, &rq)))
        return send_err(h, c, 500, "server_error", NULL, NULL, "out of memory");
    ct_stream *st = NULL;
    int retry = 1;
    if (cs) cs->t_submit = ct_now_ms();
    ct_status rc = cs ? submit(h, &cs->rq, cs->utt_text, 0, 0, &st, &e, &retry)
                      : submit(h, &rq, NULL, 0, 0, &st, &e, &retry);
    if (!cs) ct_speech_request_free(&rq);
    CT_STATS_ADD_SINCE("serve.dispatch_ms", t0);
    if (rc != CT_OK && cs) stream_free(cs);
    if (rc == CT_ERR_LIMIT) {
        char ra[32];
        snprintf(ra, sizeof ra, "%d", retry);
        const char *hd[] = {MHD_HTTP_HEADER_RETRY_AFTER, ra, NULL};
        return send_error(h, c, &e, hd);
    }
    if (rc != CT_OK) return send_error(h, c, &e, NULL);
    /* wait for admission + the first prefill (the queue), watching the client */
    double t1 = CT_STATS_T0();
    int js = wait_started(h, c, st);
    if (js < 0) {
        stream_done(h, st);
        if (cs) stream_free(cs);
        return MHD_NO;
    }
    CT_STATS_ADD_SINCE("serve.admission_wait_ms", t1);
    if (js == CT_STREAM_FAILED) { /* refused at prefill (validation) or shut down */
        ct_status fs = ct_stream_get_info(st).status;
        int code = fs == CT_ERR_INVALID_ARG || fs == CT_ERR_LIMIT ? 400 : fs == CT_ERR_TIMEOUT ? 504 : 500;
        ct_api_error_set(&e, code, code == 400 ? "invalid_request_error" : "server_error", NULL,
                         code == 400 ? "invalid_request" : code == 504 ? "timeout" : "generation_failed", "%s",
                         ct_stream_errmsg(st));
        stream_done(h, st);
        if (cs) stream_free(cs);
        return send_error(h, c, &e, NULL);
    }
    char why[256];
    stream_ctx *s = cs ? cs : stream_new(h, c, mode, fmt, af, speed, why, sizeof why);
    if (!s) {
        stream_done(h, st);
        return send_err(h, c, 500, "server_error", NULL, NULL, why);
    }
    s->st = st;
    ct_gate_stream_attach(s->k, st);
    if (mode == CT_MODE_FULL) return speech_full_codes(h, c, s);
    return queue_stream(h, c, s);
}

/* ---- other routes ----------------------------------------------------------------------- */

static enum MHD_Result metrics(ct_http *h, struct MHD_Connection *c) {
    char *t = ct_srv_metrics_text(&h->mx, h->e);
    if (!t) return MHD_NO;
    return send_buf(h, c, 200, "text/plain; version=0.0.4", t, strlen(t), NULL);
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

/* Counts the Content-Length headers of the request and whether they all agree. */
typedef struct {
    int n, differ;
    const char *first;
} cl_scan;

static enum MHD_Result scan_cl(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    cl_scan *cs = cls;
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0) return MHD_YES;
    if (!cs->n++) cs->first = value;
    else if (strcmp(cs->first, value ? value : "") != 0) cs->differ = 1;
    return MHD_YES;
}

/* Checks of the header the library lets through (every request; the gate checked the first one
   of each connection on the wire already): 0 = fine, else a response was queued. */
static int head_refused(ct_http *h, struct MHD_Connection *c, const char *url, enum MHD_Result *ret) {
    const char *msg = NULL, *code = "invalid_request";
    int status = 400;
    cl_scan cs = {0, 0, NULL};
    MHD_get_connection_values(c, MHD_HEADER_KIND, scan_cl, &cs);
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (strstr(url, "%00")) msg = "%00 in the request target";
    else if (cs.differ) msg = "conflicting Content-Length headers";
    else if (te && strcasecmp(te, "chunked") != 0) {
        status = 501;
        code = "not_implemented";
        msg = "Transfer-Encoding other than chunked is not supported";
    } else if (te && cs.n) msg = "both Transfer-Encoding and Content-Length";
    if (!msg) return 0;
    *ret = send_err(h, c, status, "invalid_request_error", NULL, code, msg);
    return 1;
}

/* A model object of GET /v1/models: id, and for an alias the served id it stands for. */
static json_t *model_json(const ct_http *h, const char *id) {
    json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "id", id, "object", "model", "created", 0, "owned_by", "codectalk");
    if (o && strcmp(id, h->model_id) != 0) json_object_set_new(o, "root", json_string(h->model_id));
    return o;
}

/* GET (describe) or DELETE /v1/audio/voices/NAME. */
static enum MHD_Result voice_one(ct_http *h, struct MHD_Connection *c, const char *name, int is_get) {
    char err[300];
    if (!ct_voice_name_ok(name)) {
        snprintf(err, sizeof err, "'%.80s' is not a voice name (1 to 64 of A-Z a-z 0-9 _ -)", name);
        return send_err(h, c, 400, "invalid_request_error", "name", "invalid_value", err);
    }
    if (!h->p.voices || !h->clone) {
        snprintf(err, sizeof err, "no uploaded voice '%s' (this server keeps none: --voices-dir)", name);
        return send_err(h, c, 404, "invalid_request_error", "name", "voice_not_found", err);
    }
    if (is_get) {
        json_t *o = ct_voice_store_describe(h->p.voices, h->m, name);
        if (o) return send_json(h, c, 200, o);
        snprintf(err, sizeof err, "no uploaded voice named '%s'", name);
        return send_err(h, c, 404, "invalid_request_error", "name", "voice_not_found", err);
    }
    ct_status st = ct_voice_store_delete(h->p.voices, name, err, sizeof err);
    if (st != CT_OK)
        return send_err(h, c, strstr(err, "no voice named") ? 404 : 500,
                        strstr(err, "no voice named") ? "invalid_request_error" : "server_error", "name",
                        strstr(err, "no voice named") ? "voice_not_found" : NULL, err);
    return send_json(h, c, 200, json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}

static enum MHD_Result route(ct_http *h, struct MHD_Connection *c, const char *url, const char *method) {
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int is_post = strcmp(method, "POST") == 0;
    if (strcmp(url, "/health") == 0) {
        if (!is_get) goto method;
        int r = ct_engine_ready(h->e, NULL, 0);
        if (r > 0 && ct_engine_get_counters(h->e).full) { /* not ready for more: a balancer sends elsewhere */
            char ra[16];
            snprintf(ra, sizeof ra, "%d", ct_engine_retry_after_s(h->e));
            const char *hd[] = {"Retry-After", ra, NULL};
            return send_text(h, c, 503, "application/json", "{\"status\":\"full\"}", hd);
        }
        return send_text(h, c, r > 0 ? 200 : 503, "application/json",
                         r > 0 ? "{\"status\":\"ok\"}" : r == 0 ? "{\"status\":\"warming_up\"}" : "{\"status\":\"failed\"}",
                         NULL);
    }
    int known = !strcmp(url, "/v1/audio/speech") || !strcmp(url, "/v1/models") || !strcmp(url, "/metrics") ||
                !strcmp(url, "/v1/audio/voices") || !strncmp(url, "/v1/models/", 11) ||
                !strncmp(url, "/v1/audio/voices/", 17);
    if (!known) {
        char m[160];
        snprintf(m, sizeof m, "no route for %.100s", url);
        return send_err(h, c, 404, "invalid_request_error", NULL, "not_found", m);
    }
    if (h->cors[0] && strcmp(method, "OPTIONS") == 0) { /* a browser's preflight: no auth, no body */
        const char *hd[] = {"Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE, OPTIONS", "Access-Control-Allow-Headers",
                            "Authorization, Content-Type", "Access-Control-Max-Age", "600", NULL};
        return send_text(h, c, 204, "text/plain", "", hd);
    }
    if (!auth_ok(h, c))
        return send_err(h, c, 401, "authentication_error", NULL, "invalid_api_key",
                        "missing or invalid API key (send Authorization: Bearer <key>)");
    if (!strncmp(url, "/v1/audio/voices/", 17) && (is_get || !strcmp(method, "DELETE"))) return voice_one(h, c, url + 17, is_get);
    if (strcmp(url, "/v1/audio/speech") == 0 || !is_get) goto method; /* speech POSTs do not get here */
    if (strcmp(url, "/metrics") == 0) return metrics(h, c);
    if (strcmp(url, "/v1/models") == 0) { /* the served id, then its aliases */
        json_t *d = json_array();
        json_array_append_new(d, model_json(h, h->model_id));
        for (int i = 0; i < h->n_model_aliases; i++) json_array_append_new(d, model_json(h, h->model_aliases[i]));
        return send_json(h, c, 200, json_pack("{s:s, s:o}", "object", "list", "data", d));
    }
    if (strncmp(url, "/v1/models/", 11) == 0) {
        const char *id = url + 11;
        int ok = strcmp(id, h->model_id) == 0;
        for (int i = 0; i < h->n_model_aliases && !ok; i++) ok = strcmp(id, h->model_aliases[i]) == 0;
        if (ok) return send_json(h, c, 200, model_json(h, id));
        char m[300];
        snprintf(m, sizeof m, "model '%.120s' is not served here (GET /v1/models lists them)", id);
        return send_err(h, c, 404, "invalid_request_error", "model", "model_not_found", m);
    }
    {
        json_t *v = json_array(), *a = json_object();
        for (int i = 0; i < h->n_voices; i++) json_array_append_new(v, json_string(h->voices[i]));
        for (int i = 0; i < h->n_voice_aliases; i++) json_object_set_new(a, h->voice_aliases[i], json_string(h->voice_targets[i]));
        json_t *up = h->p.voices && h->clone ? ct_voice_store_list(h->p.voices, h->m) : json_array();
        size_t k;
        json_t *o;
        json_array_foreach(up, k, o) /* an uploaded voice that works here is a voice too */
            if (json_is_true(json_object_get(o, "usable"))) json_array_append(v, json_object_get(o, "name"));
        return send_json(h, c, 200, json_pack("{s:o, s:o, s:o}", "voices", v, "aliases", a, "uploaded", up));
    }
method: {
    const char *allow = strcmp(url, "/v1/audio/speech") == 0   ? "POST"
                        : strcmp(url, "/v1/audio/voices") == 0 ? "GET, HEAD, POST"
                        : !strncmp(url, "/v1/audio/voices/", 17) ? "GET, HEAD, DELETE"
                                                                : "GET, HEAD";
    const char *hd[] = {MHD_HTTP_HEADER_ALLOW, allow, NULL};
    ct_api_error e;
    ct_api_error_set(&e, 405, "invalid_request_error", NULL, "method_not_allowed", "%s is not allowed on %.100s (allowed: %s)",
                     method, url, allow);
    (void)is_post;
    return send_error(h, c, &e, hd);
}
}

/* The body limit of a request: uploads, and speech on a clone model (ref_audio), get
   max_upload_bytes; everything else max_body_bytes. */
static size_t body_limit(const ct_http *h, const conn_ctx *cc) {
    return cc->is_upload || (cc->is_speech && h->clone) ? h->p.max_upload_bytes : h->p.max_body_bytes;
}

static enum MHD_Result too_large(ct_http *h, struct MHD_Connection *c, const conn_ctx *cc) {
    char m[96];
    snprintf(m, sizeof m, "request body exceeds %zu bytes", body_limit(h, cc));
    return send_err(h, c, 413, "invalid_request_error", NULL, "body_too_large", m);
}

/* ---- /v1/audio/voices: uploads (multipart/form-data or JSON) ------------------------------ */

typedef struct {
    char *v[4];          /* name, ref_text, x_vector_only, audio: the fields' bytes */
    size_t n[4], cap[4];
    int oom;             /* 1: out of memory, 2: an unknown field (named in unknown) */
    char unknown[64];
} upload_fields;

static const char *const UPLOAD_KEYS[4] = {"name", "ref_text", "x_vector_only", "audio"};

static enum MHD_Result upload_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                   const char *content_type, const char *transfer_encoding, const char *data,
                                   uint64_t off, size_t size) {
    upload_fields *u = cls;
    (void)kind, (void)filename, (void)content_type, (void)transfer_encoding, (void)off;
    int k = 0;
    while (k < 4 && strcmp(key, UPLOAD_KEYS[k]) != 0) k++;
    if (k == 4) { /* an unknown field: named in the answer */
        u->oom = 2;
        snprintf(u->unknown, sizeof u->unknown, "%.60s", key);
        return MHD_YES;
    }
    if (u->n[k] + size + 1 > u->cap[k]) {
        size_t nc = (u->n[k] + size + 1) * 2;
        char *nb = realloc(u->v[k], nc);
        if (!nb) {
            u->oom = 1;
            return MHD_NO;
        }
        u->v[k] = nb;
        u->cap[k] = nc;
    }
    memcpy(u->v[k] + u->n[k], data, size);
    u->n[k] += size;
    u->v[k][u->n[k]] = 0;
    return MHD_YES;
}

/* The JSON form: {"name", "audio" (base64 or a data: URL), "ref_text", "x_vector_only"}; the
   audio decoded through the speech request's ref_audio rules. 0, or -1 with *e set. */
static int upload_json(const char *body, size_t n, upload_fields *u, ct_api_error *e) {
    json_error_t je;
    json_t *root = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        ct_api_error_set(e, 400, "invalid_request_error", NULL, "invalid_json",
                         "the upload is neither multipart/form-data nor a JSON object (%s)", root ? "not an object" : je.text);
        json_decref(root);
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        int k = 0;
        while (k < 4 && strcmp(key, UPLOAD_KEYS[k]) != 0) k++;
        if (k == 4) {
            ct_api_error_set(e, 400, "invalid_request_error", key, "unknown_field",
                             "unknown field '%.60s' (name, audio, ref_text, x_vector_only)", key);
            json_decref(root);
            return -1;
        }
        if (json_is_null(v)) continue;
        int ok = k == 2 ? json_is_boolean(v) : json_is_string(v);
        if (!ok) {
            ct_api_error_set(e, 400, "invalid_request_error", key, "invalid_type", "'%s' must be %s", key,
                             k == 2 ? "a boolean" : "a string");
            json_decref(root);
            return -1;
        }
        if (k == 3) { /* base64 audio: the speech request's ref_audio parser */
            json_t *probe = json_pack("{s:s, s:O}", "input", "x", "ref_audio", v);
            char *txt = probe ? json_dumps(probe, JSON_COMPACT) : NULL;
            json_decref(probe);
            ct_speech_ctx sx;
            memset(&sx, 0, sizeof sx);
            sx.clone = 1;
            ct_speech_request rq;
            ct_status st = txt ? ct_speech_request_parse(txt, strlen(txt), &sx, &rq, e) : CT_ERR_NOMEM;
            free(txt);
            if (st != CT_OK) {
                if (st == CT_ERR_NOMEM) ct_api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
                else snprintf(e->param, sizeof e->param, "audio");
                json_decref(root);
                return -1;
            }
            u->v[3] = (char *)rq.ref_audio;
            u->n[3] = rq.ref_audio_len;
            rq.ref_audio = NULL;
            ct_speech_request_free(&rq);
        } else {
            const char *sv = k == 2 ? (json_is_true(v) ? "true" : "false") : json_string_value(v);
            u->v[k] = strdup(sv);
            u->n[k] = strlen(sv);
            if (!u->v[k]) u->oom = 1;
        }
    }
    json_decref(root);
    return 0;
}

/* A voice's answer object: the store's description plus the warnings of its creation. */
static enum MHD_Result voice_upload(ct_http *h, struct MHD_Connection *c, conn_ctx *cc) {
    ct_api_error e;
    if (!h->clone)
        return send_err(h, c, 400, "invalid_request_error", NULL, "unsupported",
                        "voice cloning needs a Base model; this one has preset voices (GET /v1/audio/voices)");
    if (!h->p.voices)
        return send_err(h, c, 404, "invalid_request_error", NULL, "not_found",
                        "voice uploads are off on this server (start it with --voices-dir DIR)");
    upload_fields u;
    memset(&u, 0, sizeof u);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    int rc = 0;
    if (ct && !strncasecmp(ct, "multipart/form-data", 19)) {
        struct MHD_PostProcessor *pp = MHD_create_post_processor(c, 64 * 1024, upload_iter, &u);
        if (!pp || MHD_post_process(pp, cc->body ? cc->body : "", cc->n) != MHD_YES || u.oom) {
            if (u.oom == 1) ct_api_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
            else if (u.oom == 2)
                ct_api_error_set(&e, 400, "invalid_request_error", u.unknown, "unknown_field",
                                 "unknown field '%s' (name, audio, ref_text, x_vector_only)", u.unknown);
            else ct_api_error_set(&e, 400, "invalid_request_error", NULL, "invalid_body", "malformed multipart/form-data body");
            rc = -1;
        }
        if (pp) MHD_destroy_post_processor(pp);
    } else {
        rc = upload_json(cc->body ? cc->body : "", cc->n, &u, &e);
    }
    const char *name = u.v[0], *text = u.v[1];
    int xvo = 0;
    if (!rc && u.v[2]) {
        if (!strcmp(u.v[2], "true") || !strcmp(u.v[2], "1")) xvo = 1;
        else if (strcmp(u.v[2], "false") && strcmp(u.v[2], "0")) {
            ct_api_error_set(&e, 400, "invalid_request_error", "x_vector_only", "invalid_value",
                             "'x_vector_only' must be true or false, got '%.40s'", u.v[2]);
            rc = -1;
        }
    }
    if (!rc && (!name || !ct_voice_name_ok(name))) {
        ct_api_error_set(&e, 400, "invalid_request_error", "name", name ? "invalid_value" : "missing_field",
                         "'name' %s (1 to 64 of A-Z a-z 0-9 _ -)", name ? "is not a voice name" : "is required");
        rc = -1;
    }
    if (!rc && ct_voice_store_has(h->p.voices, name)) { /* before the encoders' work (put checks again) */
        ct_api_error_set(&e, 409, "invalid_request_error", "name", "voice_exists",
                         "a voice named '%s' exists (DELETE it first)", name);
        rc = -1;
    }
    if (!rc && (!u.v[3] || !u.n[3])) {
        ct_api_error_set(&e, 400, "invalid_request_error", "audio", "missing_field", "'audio' (the reference clip) is required");
        rc = -1;
    }
    if (!rc && text && (ct_utf8_count(text, u.n[1]) < 0 || memchr(text, 0, u.n[1]))) {
        ct_api_error_set(&e, 400, "invalid_request_error", "ref_text", "invalid_value", "'ref_text' is not valid UTF-8 text");
        rc = -1;
    }
    ct_voice *v = NULL;
    ct_clone_warnings w;
    w.n = 0;
    char err[1024];
    if (!rc) {
        ct_ref_audio a;
        ct_status st = ct_ref_audio_load_memory(u.v[3], u.n[3], "the uploaded audio", &a, err, sizeof err);
        if (st == CT_OK) {
            st = ct_clone_make(h->m, h->p.encoder, &a, text, xvo, &v, &w, err, sizeof err);
            ct_ref_audio_free(&a);
        }
        if (st != CT_OK) {
            int tx = strstr(err, "transcript") != NULL; /* the transcript rules, else the clip's */
            ct_api_error_set(&e, st == CT_ERR_NOMEM ? 500 : 400, st == CT_ERR_NOMEM ? "server_error" : "invalid_request_error",
                             tx ? "ref_text" : "audio", st == CT_ERR_NOMEM ? NULL : tx ? "invalid_value" : "invalid_audio",
                             "%s", err);
            rc = -1;
        }
    }
    if (!rc) {
        ct_status st = ct_voice_store_put(h->p.voices, name, v, err, sizeof err);
        if (st != CT_OK) {
            ct_api_error_set(&e, st == CT_ERR_STATE ? 409 : 500, st == CT_ERR_STATE ? "invalid_request_error" : "server_error",
                             "name", st == CT_ERR_STATE ? "voice_exists" : NULL, "%s", err);
            rc = -1;
        }
    }
    json_t *o = NULL;
    if (!rc) {
        o = ct_voice_store_describe(h->p.voices, h->m, name);
        json_t *wa = json_array();
        for (int i = 0; i < w.n; i++) json_array_append_new(wa, json_string(w.w[i]));
        if (o) json_object_set_new(o, "warnings", wa);
        else json_decref(wa);
    }
    ct_voice_free(v);
    for (int k = 0; k < 4; k++) free(u.v[k]);
    if (rc) return send_error(h, c, &e, NULL);
    if (!o) return send_err(h, c, 500, "server_error", NULL, NULL, "out of memory");
    return send_json(h, c, 201, o);
}

/* Every request: the first call (header parsed) only records it and, for a speech POST, checks
   its declared size; the body arrives in further calls; the answer is queued on the last one,
   so that the library keeps the connection alive (a response queued on the first call closes
   it in libmicrohttpd 0.9.75). */
static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size,
                               void **con_cls) {
    ct_http *h = cls;
    (void)version;
    conn_ctx *cc = *con_cls;
    tl_cc = cc;
    if (!cc) {
        ct_gate_conn *k = ct_gate_conn_of(c);
        ct_gate_request_begin(k);
        if (!(cc = calloc(1, sizeof *cc))) return MHD_NO;
        cc->k = k;
        cc->t0_ms = ct_now_ms();
        cc->audio_s = -1;
        snprintf(cc->method, sizeof cc->method, "%s", method);
        snprintf(cc->path, sizeof cc->path, "%s", url);
        *con_cls = tl_cc = cc;
        enum MHD_Result ret;
        if (head_refused(h, c, url, &ret)) return ret;
        int speech_post = strcmp(url, "/v1/audio/speech") == 0 && strcmp(method, "POST") == 0;
        if (speech_post && auth_ok(h, c)) {
            const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
            if (cl && strtoull(cl, NULL, 10) > (h->clone ? h->p.max_upload_bytes : h->p.max_body_bytes)) {
                char m[96];
                snprintf(m, sizeof m, "request body exceeds %zu bytes",
                         h->clone ? h->p.max_upload_bytes : h->p.max_body_bytes);
                return send_err(h, c, 413, "invalid_request_error", NULL, "body_too_large", m);
            }
        }
        cc->is_speech = speech_post;
        cc->is_upload = strcmp(url, "/v1/audio/voices") == 0 && strcmp(method, "POST") == 0;
        if (cc->is_upload && auth_ok(h, c)) {
            const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
            if (cl && strtoull(cl, NULL, 10) > body_limit(h, cc)) return too_large(h, c, cc);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t lim = body_limit(h, cc);
        if (!cc->is_speech && !cc->is_upload) {
            cc->discarded += *upload_data_size;
            if (cc->discarded > lim) cc->too_big = 1;
        } else if (!cc->too_big && cc->n + *upload_data_size <= lim) {
            if (cc->n + *upload_data_size + 1 > cc->cap) {
                size_t nc = (cc->n + *upload_data_size + 1) * 2;
                if (nc > lim + 1) nc = lim + 1;
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
    ct_gate_request_body_done(cc->k);
    if (cc->too_big) return too_large(h, c, cc);
    if (cc->is_speech && auth_ok(h, c)) return speech(h, c, cc);
    if (cc->is_upload && auth_ok(h, c)) return voice_upload(h, c, cc);
    return route(h, c, url, method);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t) {
    ct_http *h = cls;
    conn_ctx *cc = *con_cls;
    tl_cc = NULL;
    ct_gate_request_end(cc ? cc->k : ct_gate_conn_of(c));
    if (cc && h->p.log_fn) { /* one access-log line */
        char line[512], audio[96] = "";
        if (cc->audio_s >= 0)
            snprintf(audio, sizeof audio, " audio %.2fs ttfa %.0fms rtf %.3f", cc->audio_s, cc->ttfa_ms, cc->rtf);
        snprintf(line, sizeof line, "%s %s %d %llub%s %.0fms%s", cc->method, cc->path, cc->status,
                 (unsigned long long)cc->bytes, audio, ct_now_ms() - cc->t0_ms,
                 t == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (cut short)");
        h->p.log_fn(h->p.log_ud, line);
    }
    if (cc) {
        if (cc->sc) cc->sc->cc = NULL;
        free(cc->body);
        free(cc);
        *con_cls = NULL;
    }
}

/* The library's URL unescaping, except that "%00" stays as it is (the handler refuses it). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls, (void)c;
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && r[1] && r[2] && (hi = ct_hexval(r[1])) >= 0 && (lo = ct_hexval(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

/* The OpenAI voices and the model's voices they default to (any voice of the model when the
   model has none of these; docs/SERVE.md). */
static const char *const OPENAI_VOICES[][2] = {
    {"alloy", "vivian"}, {"ash", "ryan"},      {"ballad", "aiden"},   {"coral", "serena"}, {"echo", "eric"},
    {"fable", "dylan"},  {"nova", "sohee"},    {"onyx", "uncle_fu"},  {"sage", "ono_anna"}, {"shimmer", "serena"},
    {"verse", "aiden"},  {"marin", "vivian"},  {"cedar", "ryan"}};

static int has_voice(const ct_http *h, const char *v) {
    for (int i = 0; i < h->n_voices; i++)
        if (strcasecmp(h->voices[i], v) == 0) return i;
    return -1;
}

/* The model aliases and the voice alias table from p (see ct_http_params). */
static ct_status set_aliases(ct_http *h, const ct_http_params *p, char *err, size_t errcap) {
    const char *ma = p->model_aliases ? p->model_aliases : "tts-1,tts-1-hd,gpt-4o-mini-tts";
    const char *va = p->voice_aliases ? p->voice_aliases : "";
    size_t need = strlen(ma) + strlen(va) + 2;
    if (need > sizeof h->alias_buf)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: the alias lists are over %zu bytes", sizeof h->alias_buf);
    char *b = h->alias_buf;
    memcpy(b, ma, strlen(ma) + 1);
    for (char *t = strtok(b, ","); t; t = strtok(NULL, ",")) {
        if (h->n_model_aliases == 32) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: more than 32 model aliases");
        h->model_aliases[h->n_model_aliases++] = t;
    }
    if (h->n_voices == 0 || strcmp(va, "-") == 0) return CT_OK; /* no voices to alias, or asked for none */
    for (size_t i = 0; i < sizeof OPENAI_VOICES / sizeof OPENAI_VOICES[0]; i++) {
        int v = has_voice(h, OPENAI_VOICES[i][1]);
        h->voice_aliases[h->n_voice_aliases] = OPENAI_VOICES[i][0];
        h->voice_targets[h->n_voice_aliases++] = h->voices[v >= 0 ? v : (int)i % h->n_voices];
    }
    char *vb = b + strlen(ma) + 1;
    memcpy(vb, va, strlen(va) + 1);
    for (char *t = strtok(vb, ","); t; t = strtok(NULL, ",")) {
        char *eq = strchr(t, '=');
        int v = eq ? has_voice(h, eq + 1) : -1;
        if (!eq || v < 0)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: voice alias '%.60s' is not alias=voice with a voice "
                           "of this model", t);
        *eq = 0;
        int k = 0;
        while (k < h->n_voice_aliases && strcasecmp(h->voice_aliases[k], t) != 0) k++;
        if (k == 64) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: more than 64 voice aliases");
        h->voice_aliases[k] = t; /* a new alias, or the table's one replaced */
        h->voice_targets[k] = h->voices[v];
        if (k == h->n_voice_aliases) h->n_voice_aliases++;
    }
    return CT_OK;
}

ct_status ct_http_start(ct_engine *e, const ct_model *m, const ct_http_params *p, ct_http **out, char *err,
                        size_t errcap) {
    if (out) *out = NULL;
    if (!e || !m || !p || !out || !p->model_id)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: NULL argument (engine, model, params, model_id)");
    if (p->port < 0 || p->port > 65535)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: port %d not in [0, 65535]", p->port);
    ct_engine_limits lim = ct_engine_get_limits(e);
    if (p->codec_chunk < 0 || p->codec_chunk > lim.max_chunk_frames)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: codec_chunk %d not in [1, %d] (0 = not given)",
                       p->codec_chunk, lim.max_chunk_frames);
    if (p->codec_id && strlen(p->codec_id) > CT_CODES_ID_MAX)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: codec_id is over %d bytes", CT_CODES_ID_MAX);
    if (p->schedule && strlen(p->schedule) >= sizeof ((ct_http *)0)->schedule)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "http: schedule '%.60s...' is too long", p->schedule);
    ct_http *h = calloc(1, sizeof *h);
    if (!h) return ct_errf(err, errcap, CT_ERR_NOMEM, "http: out of memory");
    h->e = e;
    h->m = m;
    h->p = *p;
    h->rate = lim.sample_rate;
    h->max_chunk = lim.max_chunk_frames;
    snprintf(h->schedule, sizeof h->schedule, "%s", p->schedule ? p->schedule : "");
    snprintf(h->cors, sizeof h->cors, "%s", p->cors_origin ? p->cors_origin : "");
    h->stream = p->stream ? *p->stream : ct_stream_params_default();
    h->stream.schedule = NULL;
    snprintf(h->host, sizeof h->host, "%s", p->host ? p->host : "127.0.0.1");
    snprintf(h->model_id, sizeof h->model_id, "%s", p->model_id);
    snprintf(h->api_key, sizeof h->api_key, "%s", p->api_key ? p->api_key : "");
    if (h->p.max_connections <= 0) h->p.max_connections = 64;
    if (h->p.connection_timeout_s <= 0) h->p.connection_timeout_s = 30;
    if (h->p.header_timeout_s <= 0) h->p.header_timeout_s = 10;
    if (h->p.write_timeout_s <= 0) h->p.write_timeout_s = 20;
    if (h->p.max_conn_per_ip == 0) h->p.max_conn_per_ip = 32;
    if (h->p.max_conn_per_ip < 0) h->p.max_conn_per_ip = 0;
    if (h->p.reserve_connections < 0) h->p.reserve_connections = 0;
    if (!h->p.max_body_bytes) h->p.max_body_bytes = 65536;
    h->p.host = h->host;
    h->p.model_id = h->model_id;
    h->p.api_key = h->api_key;
    h->p.schedule = NULL;
    ct_model_info mi = ct_model_get_info(m);
    ct_codes_header *ch = &h->codes_hdr;
    ch->sample_rate = lim.sample_rate;
    ch->samples_per_frame = lim.samples_per_frame;
    ch->frame_rate_mhz = (int)(((long long)lim.sample_rate * 1000 + lim.samples_per_frame / 2) / lim.samples_per_frame);
    ch->n_groups = lim.n_groups;
    ch->codebook_size = mi.codebook_size;
    snprintf(ch->codec_id, sizeof ch->codec_id, "%s", p->codec_id ? p->codec_id : "");
    snprintf(ch->model_id, sizeof ch->model_id, "%.*s", CT_CODES_ID_MAX, h->model_id);
    h->clone = mi.kind && !strcmp(mi.kind, "base");
    if (!h->p.max_upload_bytes) h->p.max_upload_bytes = 32u << 20;
    for (int i = 0; i < mi.n_speakers && h->n_voices < 256; i++)
        if (ct_model_speaker(m, i)) h->voices[h->n_voices++] = ct_model_speaker(m, i);
    for (int i = 0; i < mi.n_languages && h->n_langs < 256; i++)
        if (ct_model_language(m, i)) h->langs[h->n_langs++] = ct_model_language(m, i);
    if (set_aliases(h, p, err, errcap) != CT_OK) {
        free(h);
        return CT_ERR_INVALID_ARG;
    }
    int fd = -1;
    ct_status ls = ct_tcp_listen("http", h->host, p->port, &fd, &h->port, err, errcap);
    if (ls != CT_OK) {
        free(h);
        return ls;
    }
    ct_srv_metrics_init(&h->mx);
    ct_gate_params gp = {fd, h->p.max_connections, h->p.reserve_connections, h->p.max_conn_per_ip,
                         h->p.header_timeout_s, h->p.connection_timeout_s, h->p.write_timeout_s, 32 * 1024, &h->mx};
    h->g = ct_gate_new(&gp);
    if (h->g)
        h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                                    MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
                                0, NULL, NULL, handler, h, MHD_OPTION_CONNECTION_LIMIT,
                                (unsigned)(h->p.max_connections + h->p.reserve_connections + 16),
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->p.connection_timeout_s,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_NOTIFY_CONNECTION, ct_gate_notify,
                                h->g, MHD_OPTION_UNESCAPE_CALLBACK, unescape, h, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                (size_t)(256 * 1024), MHD_OPTION_END);
    if (!h->d || ct_gate_run(h->g, h->d) != 0) {
        if (h->d) MHD_stop_daemon(h->d);
        ct_gate_free(h->g);
        close(fd);
        ct_srv_metrics_destroy(&h->mx);
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
    ct_gate_stop_accepting(h->g); /* closes the listening socket and the connections not handed over */
    MHD_stop_daemon(h->d);
    ct_gate_free(h->g);
    ct_srv_metrics_destroy(&h->mx);
    free(h);
}
