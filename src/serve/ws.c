/* The streaming-text WebSocket endpoint (serve/ws.h): libwebsockets does the handshake and the
   framing on its own service thread; every callback below runs there. A connection holds at
   most one incremental-text stream (the open utterance); its PCM is polled without blocking
   when the socket can take more (a 5 ms timer while none is buffered). */
#include "serve/ws.h"

#include <jansson.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/pcm.h"
#include "core/status.h"
#include "serve/request.h"

#define WS_PATH "/v1/audio/speech/stream"
#define WS_SAMPLES 4096 /* PCM samples per binary frame at most */
#define WS_OUTQ 16      /* JSON events waiting to be sent; more (a client flooding bad input) closes */
#define WS_POLL_US 5000

struct ct_ws {
    ct_engine *e;
    ct_ws_params p;
    ct_speech_ctx sx;
    ct_stream_params sp;
    char schedule[128], api_key[256], host[64];
    struct lws_context *ctx;
    int port;
    pthread_t th;
    volatile int stop;
};

typedef struct {
    char *in;                /* the client message being assembled */
    size_t in_len, in_cap;
    int configured;
    ct_speech_request rq;    /* the session.config (its strings back g) */
    ct_gen_params g;
    ct_stream *st;           /* the open utterance, NULL between utterances */
    int utt;                 /* utterance_index: input.done flushes so far */
    int started;             /* audio.start sent for the open utterance */
    int refused;             /* the engine refused this utterance: deltas ignored until input.done */
    size_t npend;            /* bytes of s16le read and not sent yet, at buf + LWS_PRE */
    char *outq[WS_OUTQ];     /* JSON events to send, oldest first */
    int nq;
    float pcm[WS_SAMPLES];
    unsigned char buf[LWS_PRE + 2 * WS_SAMPLES];
} conn;

ct_ws_params ct_ws_params_default(void) {
    ct_ws_params p;
    memset(&p, 0, sizeof p);
    p.host = "127.0.0.1";
    p.max_message_bytes = 65536;
    p.text_idle_timeout_ms = 30000;
    return p;
}

/* Queues an event (takes ownership of ev); -1 when the queue is full. */
static int push(struct lws *wsi, conn *c, json_t *ev) {
    char *s = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    if (!s || c->nq == WS_OUTQ) {
        free(s);
        return -1;
    }
    c->outq[c->nq++] = s;
    lws_callback_on_writable(wsi);
    return 0;
}

static int push_error(struct lws *wsi, conn *c, const char *msg) {
    return push(wsi, c, json_pack("{s:s, s:s}", "type", "error", "message", msg));
}

/* The session.config message: the fields of a speech request (docs/SERVE.md), checked by the
   same parser as POST /v1/audio/speech; the audio is always streamed s16le PCM. */
static int configure(struct lws *wsi, ct_ws *w, conn *c, json_t *msg) {
    static const char *const ok[] = {"type", "model", "voice", "speaker", "language", "instructions", "response_format",
                                     "seed", "max_new_tokens", "initial_codec_chunk_frames", "temperature", "top_p",
                                     "top_k", "repetition_penalty", "non_streaming_mode", "stream_audio", NULL};
    char m[600];
    const char *k;
    json_t *v;
    json_object_foreach(msg, k, v) {
        int known = 0;
        for (int i = 0; ok[i] && !known; i++) known = !strcmp(k, ok[i]);
        if (!known) {
            snprintf(m, sizeof m, "session.config: unknown field '%.100s'", k);
            return push_error(wsi, c, m);
        }
    }
    json_t *sa = json_object_get(msg, "stream_audio");
    if (sa && !json_is_true(sa))
        return push_error(wsi, c, "session.config: stream_audio must be true here (audio always streams)");
    json_t *body = json_deep_copy(msg);
    json_object_del(body, "type");
    json_object_del(body, "stream_audio");
    json_object_set_new(body, "input", json_string("-")); /* the text comes with input.text */
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s) return -1;
    ct_speech_request rq;
    ct_api_error ae;
    ct_status st = ct_speech_request_parse(s, strlen(s), &w->sx, &rq, &ae);
    free(s);
    if (st != CT_OK) {
        snprintf(m, sizeof m, "session.config: %s", ae.message);
        return push_error(wsi, c, m);
    }
    if (rq.format != CT_RESP_PCM || rq.non_streaming == 1) {
        ct_speech_request_free(&rq);
        return push_error(wsi, c, rq.format != CT_RESP_PCM
                                      ? "session.config: response_format must be pcm (s16le binary frames)"
                                      : "session.config: non_streaming_mode must be false: streamed text uses the "
                                        "streaming-text layout");
    }
    if (c->configured) ct_speech_request_free(&c->rq);
    c->rq = rq;
    c->g = ct_gen_params_default();
    ct_speech_gen_params(&c->rq, &c->g);
    c->g.text = NULL;
    c->configured = 1;
    return 0;
}

/* Starts the utterance's stream on the engine. */
static int open_utt(struct lws *wsi, ct_ws *w, conn *c) {
    ct_stream_params sp = w->sp;
    char sched[64], err[600];
    sp.schedule = ct_speech_schedule(c->rq.initial_chunk_frames, 0, ct_engine_get_limits(w->e).max_chunk_frames,
                                     w->schedule[0] ? w->schedule : NULL, sched, sizeof sched);
    sp.output = CT_OUTPUT_PCM;
    sp.text_incremental = 1;
    sp.text_idle_timeout_ms = w->p.text_idle_timeout_ms;
    sp.sentence_pause_ms = sp.paragraph_pause_ms = 0;
    ct_gen_params g = c->g;
    if (!c->rq.has_seed) g.seed = 0;
    ct_status st = ct_engine_submit(w->e, &g, &sp, &c->st, err, sizeof err);
    if (st != CT_OK) {
        c->st = NULL;
        c->refused = 1;
        return push_error(wsi, c, err);
    }
    c->started = 0;
    lws_set_timer_usecs(wsi, WS_POLL_US);
    return 0;
}

/* The utterance's stream ended and its audio is out: audio.done / error, then session.done. */
static int close_utt(struct lws *wsi, ct_ws *w, conn *c) {
    ct_stream_info in = ct_stream_get_info(c->st);
    int r = 0;
    if (in.status != CT_OK) r = push_error(wsi, c, ct_stream_errmsg(c->st));
    else
        r = push(wsi, c, json_pack("{s:s, s:i, s:i, s:i}", "type", "audio.done", "utterance_index", c->utt,
                                   "sentence_index", 0, "sample_rate", ct_engine_get_limits(w->e).sample_rate));
    if (!r)
        r = push(wsi, c, json_pack("{s:s, s:i, s:i}", "type", "session.done", "utterance_index", c->utt,
                                   "total_sentences", in.status == CT_OK ? 1 : 0));
    ct_stream_release(c->st);
    c->st = NULL;
    c->utt++;
    return r;
}

/* One complete client message; -1 closes the connection. */
static int on_message(struct lws *wsi, ct_ws *w, conn *c, int binary) {
    if (binary) return push_error(wsi, c, "binary messages are not accepted: send JSON text messages");
    json_error_t je;
    json_t *msg = json_loadb(c->in, c->in_len, 0, &je);
    char m[400];
    if (!msg || !json_is_object(msg)) {
        if (msg) snprintf(m, sizeof m, "invalid JSON: a message must be an object");
        else snprintf(m, sizeof m, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
        json_decref(msg);
        return push_error(wsi, c, m);
    }
    const char *type = json_string_value(json_object_get(msg, "type"));
    int r = 0;
    if (!type) {
        r = push_error(wsi, c, "a message needs a string field \"type\"");
    } else if (!strcmp(type, "session.config")) {
        r = c->st ? push_error(wsi, c, "session.config cannot change an utterance in progress; send input.done first")
                  : configure(wsi, w, c, msg);
    } else if (!strcmp(type, "input.text")) {
        json_t *t = json_object_get(msg, "text");
        if (!c->configured) r = push_error(wsi, c, "send session.config first");
        else if (!json_is_string(t)) r = push_error(wsi, c, "input.text needs a string field \"text\"");
        else if (json_string_length(t) > 0 && !c->refused && (c->st || open_utt(wsi, w, c) == 0) && c->st) {
            if (ct_stream_append_text(c->st, json_string_value(t), json_string_length(t)) != CT_OK)
                lws_callback_on_writable(wsi); /* it failed: the error event follows its audio */
        }
    } else if (!strcmp(type, "input.done")) {
        if (c->st) {
            ct_stream_end_text(c->st); /* a failure is the stream's status, reported at its end */
            lws_callback_on_writable(wsi);
        } else {
            c->refused = 0;
            r = push(wsi, c, json_pack("{s:s, s:i, s:i}", "type", "session.done", "utterance_index", c->utt++,
                                       "total_sentences", 0));
        }
    } else if (!strcmp(type, "session.close")) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"session.close", 13);
        r = -1;
    } else {
        snprintf(m, sizeof m, "unknown message type '%.100s'", type);
        r = push_error(wsi, c, m);
    }
    json_decref(msg);
    return r;
}

/* The socket can take a message: a queued event first, then audio read earlier, then new
   audio of the open utterance (audio.start goes ahead of its first samples). */
static int on_writable(struct lws *wsi, ct_ws *w, conn *c) {
    if (c->nq) {
        char *s = c->outq[0];
        size_t n = strlen(s);
        unsigned char *b = malloc(LWS_PRE + n);
        int wr = b ? (memcpy(b + LWS_PRE, s, n), lws_write(wsi, b + LWS_PRE, n, LWS_WRITE_TEXT)) : -1;
        free(b);
        free(s);
        memmove(c->outq, c->outq + 1, sizeof(char *) * (size_t)--c->nq);
        if (wr < (int)n) return -1;
        if (c->nq || c->npend || c->st) lws_callback_on_writable(wsi);
        return 0;
    }
    if (c->npend) {
        size_t n = c->npend;
        c->npend = 0;
        if (lws_write(wsi, c->buf + LWS_PRE, n, LWS_WRITE_BINARY) < (int)n) return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (!c->st) return 0;
    int fin = 0;
    size_t n = ct_stream_read(c->st, c->pcm, WS_SAMPLES, 0, &fin);
    if (n) {
        ct_pcm_s16le(c->buf + LWS_PRE, c->pcm, n);
        c->npend = 2 * n;
        if (!c->started) { /* with the first audio, as vLLM-Omni's stream_audio sends it */
            c->started = 1;
            if (push(wsi, c,
                     json_pack("{s:s, s:i, s:i, s:s, s:s, s:i, s:i}", "type", "audio.start", "utterance_index",
                               c->utt, "sentence_index", 0, "sentence_text", "", "format", "pcm", "sample_rate",
                               ct_engine_get_limits(w->e).sample_rate, "channels", 1)) != 0)
                return -1;
        }
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (fin) return close_utt(wsi, w, c);
    lws_set_timer_usecs(wsi, WS_POLL_US); /* nothing yet: look again shortly */
    return 0;
}

/* Whether the upgrade request is for our path and carries the API key (when one is set). */
static int admit(struct lws *wsi, const ct_ws *w) {
    char uri[256], auth[300];
    if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, WS_PATH) != 0) return 0;
    if (!w->api_key[0]) return 1;
    if (lws_hdr_copy(wsi, auth, sizeof auth, WSI_TOKEN_HTTP_AUTHORIZATION) <= 0) return 0;
    return strncmp(auth, "Bearer ", 7) == 0 && strcmp(auth + 7, w->api_key) == 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    ct_ws *w = lws_context_user(lws_get_context(wsi));
    conn *c = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        return admit(wsi, w) ? 0 : -1;
    case LWS_CALLBACK_ESTABLISHED:
        memset(c, 0, sizeof *c);
        return 0;
    case LWS_CALLBACK_RECEIVE: {
        size_t need = c->in_len + len;
        if (need > w->p.max_message_bytes) {
            char why[96];
            int k = snprintf(why, sizeof why, "message over %zu bytes", w->p.max_message_bytes);
            lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *)why, (size_t)k);
            return -1;
        }
        if (need + 1 > c->in_cap) {
            size_t cap = c->in_cap ? c->in_cap : 1024;
            while (cap < need + 1) cap *= 2;
            char *b = realloc(c->in, cap);
            if (!b) return -1;
            c->in = b;
            c->in_cap = cap;
        }
        memcpy(c->in + c->in_len, in, len);
        c->in_len = need;
        if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi)) return 0;
        int r = on_message(wsi, w, c, lws_frame_is_binary(wsi));
        c->in_len = 0;
        if (r) {
            if (c->nq == WS_OUTQ)
                lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)"too many errors", 15);
            return -1;
        }
        return 0;
    }
    case LWS_CALLBACK_TIMER:
        lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return on_writable(wsi, w, c);
    case LWS_CALLBACK_CLOSED:
        ct_stream_release(c->st); /* cancels a running utterance: its slot frees on the next pass */
        c->st = NULL;
        for (int i = 0; i < c->nq; i++) free(c->outq[i]);
        c->nq = 0;
        free(c->in);
        c->in = NULL;
        if (c->configured) ct_speech_request_free(&c->rq);
        c->configured = 0;
        return 0;
    default:
        return 0;
    }
}

static struct lws_protocols protocols[] = {
    {"codectalk-speech", callback, sizeof(conn), 4096, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void *service(void *arg) {
    ct_ws *w = arg;
    while (!w->stop) lws_service(w->ctx, 0);
    return NULL;
}

ct_status ct_ws_start(ct_engine *e, const ct_http *h, const ct_ws_params *p, ct_ws **out, char *err,
                      size_t errcap) {
    *out = NULL;
    ct_ws *w = calloc(1, sizeof *w);
    if (!w) return ct_errf(err, errcap, CT_ERR_NOMEM, "ws: out of memory");
    w->e = e;
    w->p = p ? *p : ct_ws_params_default();
    if (w->p.max_message_bytes < 256 || w->p.text_idle_timeout_ms < 0) {
        free(w);
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ws: max_message_bytes under 256 or a negative idle timeout");
    }
    const char *sched = NULL, *key = NULL;
    ct_http_shared(h, &w->sx, &w->sp, &sched, &key);
    snprintf(w->schedule, sizeof w->schedule, "%s", sched ? sched : "");
    snprintf(w->api_key, sizeof w->api_key, "%s", key ? key : "");
    snprintf(w->host, sizeof w->host, "%s", w->p.host ? w->p.host : "127.0.0.1");
    lws_set_log_level(0, NULL); /* the library does not print */
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = w->p.port;
    info.iface = w->host;
    info.protocols = protocols;
    info.user = w;
    info.gid = -1;
    info.uid = -1;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    w->ctx = lws_create_context(&info);
    if (!w->ctx) {
        free(w);
        return ct_errf(err, errcap, CT_ERR_IO, "ws: cannot listen on %s:%d", info.iface, info.port);
    }
    w->port = lws_get_vhost_listen_port(lws_get_vhost_by_name(w->ctx, "default"));
    if (pthread_create(&w->th, NULL, service, w) != 0) {
        lws_context_destroy(w->ctx);
        free(w);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "ws: cannot start the service thread");
    }
    *out = w;
    return CT_OK;
}

int ct_ws_port(const ct_ws *w) { return w ? w->port : 0; }

void ct_ws_stop(ct_ws *w) {
    if (!w) return;
    w->stop = 1;
    lws_cancel_service(w->ctx);
    pthread_join(w->th, NULL);
    lws_context_destroy(w->ctx); /* closes the connections: their streams are released */
    free(w);
}
