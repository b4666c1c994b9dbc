/* Wyoming server: a listener thread, one thread per connection reading events
   (serve/wyoming_event.c) and answering them from the stream engine. */
#include "serve/wyoming.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "audio/pcm.h"
#include "core/clock.h"
#include "core/status.h"
#include "serve/listen.h"
#include "serve/voices.h"
#include "serve/wyoming_event.h"
#include "text/langcode.h"

#define READ_SAMPLES 8192 /* most samples per audio-chunk (341 ms); a chunk holds what was there */
#define POLL_MS 200       /* how often blocked reads look at the stop flag */

typedef struct wy_conn wy_conn;

struct ct_wy {
    ct_engine *e;
    const ct_model *m;
    ct_wy_params p;
    ct_stream_params sp;
    char host[64], model_id[128], schedule[128];
    int fd, port, rate;
    char **voices;  /* speakers, or {"default"} for a model without any */
    int n_voices, has_speakers, def_voice;
    json_t *langs;  /* the model's languages as codes */
    atomic_int stop;
    pthread_t th;
    pthread_mutex_t mu;
    wy_conn *conns; /* [max_connections] slots */
};

struct wy_conn {
    ct_wy *w;
    int fd, used, done;
    pthread_t th;
    char peer[64];
    uint8_t *buf;
    size_t len, cap;
    float *pcm;
    uint8_t *s16;
    /* the request being answered: audio-start sent, samples sent, submission time */
    ct_stream *st;
    int started;
    int64_t samples;
    double t0;
    /* streaming synthesis (synthesize-start .. synthesize-stop): st takes the text in pieces */
    int streaming, failed;
    size_t chars;
    uint64_t seed;
    char voice[64];
    ct_voice *cloned; /* a saved voice the request names (Base), else NULL */
};

ct_wy_params ct_wy_params_default(void) {
    ct_wy_params p;
    memset(&p, 0, sizeof p);
    p.host = "127.0.0.1";
    p.max_connections = 64;
    p.timeout_s = 30;
    p.max_input_chars = 4096;
    return p;
}

ct_status ct_wy_parse_uri(const char *uri, char *host, size_t cap, int *port, char *err, size_t errcap) {
    if (!uri || strncmp(uri, "tcp://", 6) != 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "--uri '%s': expected tcp://HOST:PORT (unix:// and stdio:// are not served)", uri ? uri : "");
    const char *h = uri + 6, *c = strrchr(h, ':');
    char *end = NULL;
    long v = c ? strtol(c + 1, &end, 10) : -1;
    if (!c || c == h || (size_t)(c - h) >= cap || !end || end == c + 1 || *end || v < 0 || v > 65535)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "--uri '%s': expected tcp://HOST:PORT with a port 0..65535",
                       uri);
    memcpy(host, h, (size_t)(c - h));
    host[c - h] = 0;
    *port = (int)v;
    return CT_OK;
}

static void logf_(ct_wy *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(ct_wy *w, const char *fmt, ...) {
    if (!w->p.log_fn) return;
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    w->p.log_fn(w->p.log_ud, line);
}

/* ---- writing ------------------------------------------------------------------------------ */

static int send_all(wy_conn *c, const uint8_t *b, size_t n) {
    while (n > 0) {
        ssize_t k = send(c->fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Sends one event; data is consumed (may be NULL). -1 when the client is gone. */
static int send_event(wy_conn *c, const char *type, json_t *data, const void *payload, size_t plen) {
    size_t n = 0;
    uint8_t *b = ct_wy_format(type, data, payload, plen, &n);
    json_decref(data);
    if (!b) return -1;
    int r = send_all(c, b, n);
    free(b);
    return r;
}

static int send_error(wy_conn *c, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int send_error(wy_conn *c, const char *code, const char *fmt, ...) {
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    logf_(c->w, "wyoming %s: error %s: %s", c->peer, code, text);
    return send_event(c, "error", json_pack("{s:s, s:s}", "text", text, "code", code), NULL, 0);
}

static json_t *audio_fmt(const ct_wy *w, int64_t ts_ms) {
    return json_pack("{s:i, s:i, s:i, s:I}", "rate", w->rate, "width", 2, "channels", 1, "timestamp", (json_int_t)ts_ms);
}

/* ---- reading ------------------------------------------------------------------------------ */

static int pump(wy_conn *c, int wait_ms);
static json_t *make_info(ct_wy *w);
static int finish(wy_conn *c, size_t chars);

/* The next event into *ev: 1; 0 when the connection ended (client closed, timeout, stop, bad
   input: logged, and an error event sent where the client can still read it). */
static int read_event(wy_conn *c, ct_wy_event *ev) {
    ct_wy *w = c->w;
    ct_wy_limits lim = ct_wy_limits_default();
    char err[256];
    for (;;) {
        size_t used = 0;
        int r = ct_wy_parse(c->buf, c->len, &lim, ev, &used, err, sizeof err);
        if (r == 1) {
            c->len -= used; /* the payload is not used by any event we answer */
            memmove(c->buf, c->buf + used, c->len);
            return 1;
        }
        if (r < 0) {
            send_error(c, "bad_event", "%s; closing the connection", err);
            logf_(w, "wyoming %s: closed: %s", c->peer, err);
            return 0;
        }
        size_t need = used ? used : c->len + 4096;
        if (need > c->cap) {
            size_t nc = c->cap ? c->cap : 8192;
            while (nc < need) nc *= 2;
            uint8_t *nb = realloc(c->buf, nc);
            if (!nb) {
                logf_(w, "wyoming %s: closed: out of memory for a %zu-byte event", c->peer, need);
                return 0;
            }
            c->buf = nb;
            c->cap = nc;
        }
        double t0 = ct_now_ms();
        for (;;) {
            if (atomic_load(&w->stop)) return 0;
            if (c->st) { /* a streaming synthesis: its audio goes out while the text comes in */
                int pr = pump(c, 0);
                if (pr < 0) return 0;
                if (pr > 0) { /* ended before synthesize-stop: failed (idle text, bad text) */
                    if (finish(c, c->chars) < 0) return 0;
                    c->failed = 1;
                }
            }
            struct pollfd pf = {c->fd, POLLIN, 0};
            int rp = poll(&pf, 1, c->st ? 10 : POLL_MS);
            if (rp > 0) break;
            if (rp < 0 && errno != EINTR) return 0;
            if (ct_now_ms() - t0 >= w->p.timeout_s * 1000.0) {
                if (c->len == 0) {
                    logf_(w, "wyoming %s: closed: idle for %d s", c->peer, w->p.timeout_s);
                } else {
                    snprintf(err, sizeof err, "event incomplete after %d s without data (%zu of %s%zu bytes arrived)",
                             w->p.timeout_s, c->len, used ? "" : "more than ", used ? used : c->len);
                    send_error(c, "bad_event", "%s; closing the connection", err);
                    logf_(w, "wyoming %s: closed: %s", c->peer, err);
                }
                return 0;
            }
        }
        ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (c->len > 0)
                logf_(w, "wyoming %s: closed by the client inside an event (%zu of %s%zu bytes arrived)", c->peer,
                      c->len, used ? "" : "more than ", used ? used : c->len);
            return 0;
        }
        c->len += (size_t)k;
    }
}

/* ---- synthesis ---------------------------------------------------------------------------- */

static int find_voice(const ct_wy *w, const char *name) {
    for (int i = 0; i < w->n_voices; i++)
        if (strcasecmp(w->voices[i], name) == 0) return i;
    return -1;
}

/* The model's language name for a code ("en", "en_US") or name ("english"); NULL if none. */
static const char *find_language(const ct_wy *w, const char *s) {
    ct_model_info mi = ct_model_get_info(w->m);
    const char *code = ct_language_from_code(s);
    for (int i = 0; i < mi.n_languages; i++) {
        const char *l = ct_model_language(w->m, i);
        if (strcasecmp(l, s) == 0 || (code && strcmp(l, code) == 0)) return l;
    }
    return NULL;
}

/* The voice object of a synthesize / synthesize-start event into voice[64] / language[64]
   ("" = the default voice / "auto"). 0, or -1 after an error event (when the client is still
   there: *gone says whether it is not). */
static int parse_voice(wy_conn *c, const json_t *data, char *voice, char *language, int *gone) {
    ct_wy *w = c->w;
    const json_t *v = json_object_get(data, "voice");
    voice[0] = 0;
    snprintf(language, 64, "auto");
    *gone = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_object(v)) {
        *gone = send_error(c, "invalid_request", "'voice' must be an object") < 0;
        return -1;
    }
    const json_t *n = json_object_get(v, "name"), *l = json_object_get(v, "language");
    ct_voice_free(c->cloned);
    c->cloned = NULL;
    if (n && !json_is_null(n)) {
        int i = json_is_string(n) ? find_voice(w, json_string_value(n)) : -1;
        char verr[300] = "";
        if (i < 0 && w->p.voices && json_is_string(n) && ct_voice_name_ok(json_string_value(n)) &&
            ct_voice_store_get(w->p.voices, w->m, json_string_value(n), &c->cloned, verr, sizeof verr) == CT_OK)
            return 0; /* a saved voice: no speaker */
        if (verr[0] && !strstr(verr, "no voice named")) {
            *gone = send_error(c, "unknown_voice", "voice '%.60s': %s", json_string_value(n), verr) < 0;
            return -1;
        }
        if (i < 0) {
            char names[400] = "";
            for (int k = 0; k < w->n_voices; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", w->voices[k]);
            *gone = send_error(c, "unknown_voice", "unknown voice '%.60s'; voices: %s%s",
                               json_is_string(n) ? json_string_value(n) : "(not a string)", names,
                               w->p.voices ? " and the saved voices of info" : "") < 0;
            return -1;
        }
        snprintf(voice, 64, "%s", w->voices[i]);
    }
    if (l && !json_is_null(l)) {
        const char *name = json_is_string(l) ? find_language(w, json_string_value(l)) : NULL;
        if (!name) {
            *gone = send_error(c, "unknown_language", "unknown language '%.60s' (info lists this model's)",
                               json_is_string(l) ? json_string_value(l) : "(not a string)") < 0;
            return -1;
        }
        snprintf(language, 64, "%s", name);
    }
    return 0;
}

static uint64_t new_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
}

static size_t utf8_chars(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* Submits text (the first piece when incremental) as c->st. 0, 1 when refused (an error
   event was sent), -1 when the client is gone. */
static int submit(wy_conn *c, const char *text, size_t n, const char *voice, const char *language, uint64_t seed,
                  int incremental) {
    ct_wy *w = c->w;
    char *t = strndup(text, n);
    if (!t) return send_error(c, "server_error", "out of memory") < 0 ? -1 : 1;
    ct_gen_params g = ct_gen_params_default();
    g.text = t;
    g.speaker = voice[0] ? voice : w->has_speakers ? w->voices[w->def_voice] : NULL;
    g.language = language;
    g.seed = seed;
    if (c->cloned) ct_voice_apply(c->cloned, &g, 0); /* kept until the next request's voice */
    ct_stream_params sp = w->sp;
    if (incremental) {
        sp.text_incremental = 1;
        sp.text_idle_timeout_ms = w->p.timeout_s * 1000; /* a client that never ends its text */
    }
    char msg[512];
    c->started = 0;
    c->samples = 0;
    c->t0 = ct_now_ms();
    ct_status s = ct_engine_submit(w->e, &g, &sp, &c->st, msg, sizeof msg);
    free(t);
    if (s == CT_OK) return 0;
    c->st = NULL;
    int r;
    if (s == CT_ERR_LIMIT) {
        ct_engine_limits l = ct_engine_get_limits(w->e);
        r = send_error(c, "server_busy", "all %d stream slots are busy and the queue (%d) is full; retry after %d s",
                       l.max_streams, l.queue_cap, ct_engine_retry_after_s(w->e));
    } else if (s == CT_ERR_INVALID_ARG) {
        r = send_error(c, "invalid_request", "%s", msg);
    } else if (s == CT_ERR_STATE) {
        r = send_error(c, "not_ready", "the engine is not serving");
    } else {
        r = send_error(c, "server_error", "%s", msg);
    }
    return r < 0 ? -1 : 1;
}

/* Sends the audio of c->st that is there (waiting up to wait_ms for some, < 0 = until the
   stream ends) as audio-start (before the first) and audio-chunks. 1 when the stream has ended
   and everything was sent, 0 when not yet, -1 when the client is gone or the server stops (the
   stream is cancelled). */
static int pump(wy_conn *c, int wait_ms) {
    ct_wy *w = c->w;
    int finished = 0;
    for (;;) {
        if (atomic_load(&w->stop)) break;
        size_t k = ct_stream_read(c->st, c->pcm, READ_SAMPLES, wait_ms < 0 ? POLL_MS : wait_ms, &finished);
        if (k > 0) {
            if (!c->started) {
                if (send_event(c, "audio-start", audio_fmt(w, 0), NULL, 0) < 0) break;
                c->started = 1;
            }
            ct_pcm_s16le(c->s16, c->pcm, k);
            if (send_event(c, "audio-chunk", audio_fmt(w, c->samples * 1000 / w->rate), c->s16, k * 2) < 0) break;
            c->samples += (int64_t)k;
            wait_ms = wait_ms < 0 ? wait_ms : 0; /* take what else is there, without waiting */
            continue;
        }
        if (finished) return 1;
        if (wait_ms >= 0) return 0;
        char b; /* no audio to send: a client that left is noticed here */
        ssize_t pk = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (pk == 0 || (pk < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    }
    ct_stream_cancel(c->st);
    logf_(w, "wyoming %s: client gone (or stopping): stream cancelled after %.2f s of audio", c->peer,
          (double)c->samples / w->rate);
    return -1;
}

/* After pump said 1: audio-stop (audio-start first when there was no audio), or an error event
   (and audio-stop when audio had begun) when the stream failed; releases c->st. 0, 1 when the
   request failed, -1 when the client is gone. */
static int finish(wy_conn *c, size_t chars) {
    ct_wy *w = c->w;
    ct_stream_info si = ct_stream_get_info(c->st);
    json_t *stop = json_pack("{s:I}", "timestamp", (json_int_t)(c->samples * 1000 / w->rate));
    int rc = 0;
    if (si.status != CT_OK) {
        rc = send_error(c, "synthesis_failed", "%s", ct_stream_errmsg(c->st)) < 0 ? -1 : 1;
        if (rc > 0 && c->started && send_event(c, "audio-stop", json_incref(stop), NULL, 0) < 0) rc = -1;
    } else {
        if (!c->started && send_event(c, "audio-start", audio_fmt(w, 0), NULL, 0) < 0) rc = -1;
        if (!rc && send_event(c, "audio-stop", json_incref(stop), NULL, 0) < 0) rc = -1;
        logf_(w, "wyoming %s: synthesized %zu chars%s (seed %llu): %.2f s audio, TTFA %.0f ms, %.0f ms", c->peer, chars,
              c->streaming ? " streamed" : "", (unsigned long long)c->seed, (double)c->samples / w->rate, si.ttfa_ms,
              ct_now_ms() - c->t0);
    }
    json_decref(stop);
    ct_stream_release(c->st);
    c->st = NULL;
    return rc;
}

/* The whole-text synthesize: one engine stream (long text split into utterances by the
   engine), its audio as it is made. -1 when the client is gone, else 0. */
static int synth(wy_conn *c, const char *text, size_t n, const char *voice, const char *language) {
    c->seed = c->w->p.has_seed ? c->w->p.seed : new_seed();
    int r = submit(c, text, n, voice, language, c->seed, 0);
    if (r) return r < 0 ? -1 : 0;
    r = pump(c, -1);
    if (r < 0) {
        ct_stream_release(c->st);
        c->st = NULL;
        return -1;
    }
    return finish(c, utf8_chars(text, n)) < 0 ? -1 : 0;
}

/* A streaming synthesis that failed (error event sent): its stream is dropped, the rest of its
   text ignored up to synthesize-stop. */
static void stream_failed(wy_conn *c) {
    ct_stream_release(c->st);
    c->st = NULL;
    c->failed = 1;
}

/* One event; -1 ends the connection. */
static int handle(wy_conn *c, const ct_wy_event *ev) {
    ct_wy *w = c->w;
    const char *t = ev->type;
    int gone = 0;
    if (!strcmp(t, "describe")) return send_event(c, "info", make_info(w), NULL, 0);
    if (!strcmp(t, "ping")) {
        const json_t *x = json_object_get(ev->data, "text");
        return send_event(c, "pong", json_is_string(x) ? json_pack("{s:O}", "text", x) : NULL, NULL, 0);
    }
    if (!strcmp(t, "synthesize")) {
        if (c->streaming) return 0; /* the copy a streaming client sends for older servers */
        const json_t *x = json_object_get(ev->data, "text");
        if (!json_is_string(x)) return send_error(c, "invalid_request", "synthesize needs a 'text' string");
        const char *s = json_string_value(x);
        size_t n = json_string_length(x);
        if (strlen(s) != n) return send_error(c, "invalid_request", "'text' holds a NUL character");
        if (utf8_chars(s, n) > (size_t)w->p.max_input_chars)
            return send_error(c, "text_too_long", "'text' has %zu characters; the limit is %d", utf8_chars(s, n),
                              w->p.max_input_chars);
        char voice[64], lang[64];
        if (parse_voice(c, ev->data, voice, lang, &gone)) return gone ? -1 : 0;
        return synth(c, s, n, voice, lang);
    }
    if (!strcmp(t, "synthesize-start")) {
        if (c->streaming) return send_error(c, "invalid_request", "synthesize-start inside a streaming synthesis");
        char lang[64];
        if (parse_voice(c, ev->data, c->voice, lang, &gone)) return gone ? -1 : 0;
        c->streaming = 1;
        c->failed = 0;
        c->chars = 0;
        c->seed = w->p.has_seed ? w->p.seed : new_seed();
        int r = submit(c, "", 0, c->voice, lang, c->seed, 1); /* the text comes in pieces */
        if (r > 0) c->failed = 1;
        return r < 0 ? -1 : 0;
    }
    if (!strcmp(t, "synthesize-chunk")) {
        if (!c->streaming) return send_error(c, "invalid_request", "synthesize-chunk outside synthesize-start .. -stop");
        const json_t *x = json_object_get(ev->data, "text");
        if (!json_is_string(x)) return send_error(c, "invalid_request", "synthesize-chunk needs a 'text' string");
        if (c->failed) return 0;
        const char *s = json_string_value(x);
        size_t n = json_string_length(x);
        if (strlen(s) != n) return send_error(c, "invalid_request", "'text' holds a NUL character");
        c->chars += utf8_chars(s, n);
        if (c->chars > (size_t)w->p.max_input_chars) {
            stream_failed(c);
            return send_error(c, "text_too_long", "the streamed text is over %d characters", w->p.max_input_chars);
        }
        if (ct_stream_append_text(c->st, s, n) != CT_OK) { /* the stream has failed: its message says why */
            int r = send_error(c, "synthesis_failed", "%s", ct_stream_errmsg(c->st));
            stream_failed(c);
            return r;
        }
        return 0;
    }
    if (!strcmp(t, "synthesize-stop")) {
        if (!c->streaming) return send_error(c, "invalid_request", "synthesize-stop without synthesize-start");
        if (c->st) {
            ct_stream_end_text(c->st); /* a refusal fails the stream: finish() sends its message */
            if (pump(c, -1) < 0 || finish(c, c->chars) < 0) return -1;
        }
        c->streaming = 0;
        c->failed = 0;
        return send_event(c, "synthesize-stopped", NULL, NULL, 0);
    }
    /* Wyoming: servers drop events they do not know (select-program, other domains) */
    logf_(w, "wyoming %s: ignoring event '%s'", c->peer, t);
    return 0;
}

static void *conn_main(void *arg) {
    wy_conn *c = arg;
    ct_wy *w = c->w;
    struct timeval tv = {w->p.timeout_s, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    c->pcm = malloc(sizeof(float) * READ_SAMPLES);
    c->s16 = malloc(2 * READ_SAMPLES);
    if (c->pcm && c->s16) {
        ct_wy_event ev;
        while (read_event(c, &ev) == 1) {
            int r = handle(c, &ev);
            ct_wy_event_clear(&ev);
            if (r < 0) break;
        }
    }
    ct_stream_release(c->st); /* a streaming synthesis the client left: cancelled */
    c->st = NULL;
    ct_voice_free(c->cloned);
    c->cloned = NULL;
    shutdown(c->fd, SHUT_RDWR);
    free(c->pcm);
    free(c->s16);
    free(c->buf);
    pthread_mutex_lock(&w->mu);
    close(c->fd);
    c->fd = -1;
    c->pcm = NULL;
    c->s16 = NULL;
    c->buf = NULL;
    c->done = 1;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void *accept_main(void *arg) {
    ct_wy *w = arg;
    while (!atomic_load(&w->stop)) {
        struct pollfd pf = {w->fd, POLLIN, 0};
        if (poll(&pf, 1, POLL_MS) <= 0) continue;
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = accept(w->fd, (struct sockaddr *)&sa, &sl);
        if (fd < 0) continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        char peer[64], ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
        snprintf(peer, sizeof peer, "%s:%d", ip, ntohs(sa.sin_port));
        pthread_mutex_lock(&w->mu);
        int slot = -1;
        for (int i = 0; i < w->p.max_connections && slot < 0; i++) {
            wy_conn *c = &w->conns[i];
            if (c->used && c->done) {
                pthread_join(c->th, NULL);
                c->used = 0;
            }
            if (!c->used) slot = i;
        }
        wy_conn *c = slot >= 0 ? &w->conns[slot] : NULL;
        if (c) {
            memset(c, 0, sizeof *c);
            c->w = w;
            c->fd = fd;
            c->used = 1;
            snprintf(c->peer, sizeof c->peer, "%s", peer);
            if (pthread_create(&c->th, NULL, conn_main, c) != 0) {
                c->used = 0;
                c = NULL;
            }
        }
        pthread_mutex_unlock(&w->mu);
        if (!c) {
            wy_conn tmp;
            memset(&tmp, 0, sizeof tmp);
            tmp.w = w;
            tmp.fd = fd;
            snprintf(tmp.peer, sizeof tmp.peer, "%s", peer);
            struct timeval tv = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            send_error(&tmp, "too_many_connections", "all %d connections are in use; closing", w->p.max_connections);
            close(fd);
        }
    }
    return NULL;
}

static json_t *voice_json(const char *name, json_t *attr, const char *desc, json_t *langs) {
    return json_pack("{s:s, s:O, s:b, s:s, s:n, s:O}", "name", name, "attribution", attr, "installed", 1,
                     "description", desc, "version", "languages", langs);
}

/* The info event's data: one tts program, one voice per speaker (and per saved voice made for
   this model), languages as ISO 639-1 codes. Made for each describe (saved voices change). */
static json_t *make_info(ct_wy *w) {
    json_t *attr = json_pack("{s:s, s:s}", "name", "Qwen3-TTS (Alibaba Qwen team), run by codectalk", "url",
                             "https://github.com/QwenLM/Qwen3-TTS");
    json_t *voices = json_array();
    for (int i = 0; i < w->n_voices; i++)
        json_array_append_new(voices, voice_json(w->voices[i], attr,
                                                 w->has_speakers ? "preset speaker" : "the model's own voice", w->langs));
    json_t *saved = w->p.voices ? ct_voice_store_list(w->p.voices, w->m) : NULL;
    size_t k;
    json_t *it;
    json_array_foreach(saved, k, it) {
        if (!json_is_true(json_object_get(it, "usable"))) continue;
        const char *mode = json_string_value(json_object_get(it, "mode"));
        json_array_append_new(voices, voice_json(json_string_value(json_object_get(it, "name")), attr,
                                                 mode && !strcmp(mode, "icl") ? "cloned voice (ICL)"
                                                                              : "cloned voice (x-vector only)",
                                                 w->langs));
    }
    json_decref(saved);
    char desc[200];
    snprintf(desc, sizeof desc, "codectalk %s: %s", ct_version(), w->model_id);
    json_t *prog = json_pack("{s:s, s:O, s:b, s:s, s:s, s:o, s:b}", "name", w->model_id, "attribution", attr, "installed",
                             1, "description", desc, "version", ct_version(), "voices", voices,
                             "supports_synthesize_streaming", 1);
    json_decref(attr);
    return json_pack("{s:[], s:[o], s:[], s:[], s:[], s:[], s:[]}", "asr", "tts", prog, "handle", "intent", "wake",
                     "mic", "snd");
}

/* The model's languages as ISO 639-1 codes. */
static json_t *language_codes(const ct_model *m) {
    static const char *codes[] = {"zh", "en", "de", "it", "pt", "es", "ja", "ko", "fr", "ru"};
    ct_model_info mi = ct_model_get_info(m);
    json_t *langs = json_array();
    for (int i = 0; i < mi.n_languages; i++)
        for (size_t k = 0; k < sizeof codes / sizeof *codes; k++) {
            const char *name = ct_language_from_code(codes[k]);
            if (name && !strcmp(ct_model_language(m, i), name)) json_array_append_new(langs, json_string(codes[k]));
        }
    return langs;
}

static void wy_free(ct_wy *w) {
    if (!w) return;
    for (int i = 0; i < w->n_voices; i++) free(w->voices[i]);
    free(w->voices);
    json_decref(w->langs);
    free(w->conns);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

ct_status ct_wy_start(ct_engine *e, const ct_model *m, const ct_wy_params *p, ct_wy **out, char *err,
                      size_t errcap) {
    *out = NULL;
    if (!e || !m || !p || !p->model_id || p->max_connections < 1 || p->timeout_s < 1 || p->max_input_chars < 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "wyoming: engine, model and model_id are required; max_connections, timeout_s and "
                       "max_input_chars must be >= 1");
    ct_wy *w = calloc(1, sizeof *w);
    if (!w) return ct_errf(err, errcap, CT_ERR_NOMEM, "wyoming: out of memory");
    pthread_mutex_init(&w->mu, NULL);
    w->e = e;
    w->m = m;
    w->p = *p;
    snprintf(w->host, sizeof w->host, "%s", p->host ? p->host : "127.0.0.1");
    snprintf(w->model_id, sizeof w->model_id, "%s", p->model_id);
    w->p.host = w->host;
    w->p.model_id = w->model_id;
    w->sp = p->stream ? *p->stream : ct_stream_params_default();
    snprintf(w->schedule, sizeof w->schedule, "%s", w->sp.schedule ? w->sp.schedule : "exact");
    w->sp.schedule = w->schedule;
    w->sp.output = CT_OUTPUT_PCM;
    w->p.stream = &w->sp;
    w->rate = ct_engine_get_limits(e).sample_rate;
    ct_model_info mi = ct_model_get_info(m);
    w->has_speakers = mi.n_speakers > 0;
    w->n_voices = w->has_speakers ? mi.n_speakers : 1;
    w->voices = calloc((size_t)w->n_voices, sizeof *w->voices);
    w->conns = calloc((size_t)p->max_connections, sizeof *w->conns);
    int ok = w->voices && w->conns;
    for (int i = 0; ok && i < w->n_voices; i++) {
        w->voices[i] = strdup(w->has_speakers ? ct_model_speaker(m, i) : "default");
        ok = w->voices[i] != NULL;
        if (ok && !strcmp(w->voices[i], "vivian")) w->def_voice = i; /* the server's default voice */
    }
    if (ok) ok = (w->langs = language_codes(m)) != NULL;
    if (!ok) {
        wy_free(w);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "wyoming: out of memory");
    }
    ct_status st = ct_tcp_listen("wyoming", w->host, p->port, &w->fd, &w->port, err, errcap);
    if (st != CT_OK) {
        wy_free(w);
        return st;
    }
    if (pthread_create(&w->th, NULL, accept_main, w) != 0) {
        close(w->fd);
        wy_free(w);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "wyoming: cannot start the listener thread");
    }
    *out = w;
    return CT_OK;
}

int ct_wy_port(const ct_wy *w) { return w->port; }

void ct_wy_stop(ct_wy *w) {
    if (!w) return;
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
    close(w->fd);
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->p.max_connections; i++)
        if (w->conns[i].used && w->conns[i].fd >= 0) shutdown(w->conns[i].fd, SHUT_RDWR);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->p.max_connections; i++)
        if (w->conns[i].used) pthread_join(w->conns[i].th, NULL);
    wy_free(w);
}
