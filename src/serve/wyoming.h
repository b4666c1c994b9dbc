/* Native Wyoming server (Home Assistant's voice protocol, docs/WYOMING.md) over the public stream
   engine: describe -> info; synthesize -> audio-start / audio-chunk (PCM16 as the engine
   streams it) / audio-stop; the streaming synthesize-start / -chunk / -stop of Wyoming 1.7
   (one incremental-text engine stream: audio goes out while text comes in) -> audio-start /
   audio-chunk / audio-stop, synthesize-stopped; ping -> pong. One thread per connection. */
#ifndef CT_SERVE_WYOMING_H
#define CT_SERVE_WYOMING_H

#include <stddef.h>
#include <stdint.h>

#include "codectalk.h"

typedef struct ct_wy ct_wy;

typedef struct {
    const char *host;           /* IPv4 address or name (default "127.0.0.1") */
    int port;                   /* 0 = any free port (ct_wy_port) */
    const char *model_id;       /* the model's name in info (required) */
    const ct_stream_params *stream; /* every request's stream params (the deploy profile's);
                                   NULL = defaults. Copied, schedule included. */
    int max_connections;        /* concurrent connections (default 64); one more gets an error
                                   event and is closed */
    int timeout_s;              /* a connection that sends nothing for this long is closed,
                                   idle or inside an event (default 30); also the send timeout */
    int max_input_chars;        /* characters of one synthesize text or of the whole text of a
                                   streaming synthesis (default 4096) */
    int has_seed;               /* 1: every request (streaming ones too) uses seed;
                                   0: a new random seed per request */
    uint64_t seed;
    struct ct_voice_store *voices; /* Base models: the saved voices (serve's --voices-dir), listed
                                   in info and usable by name; NULL = none. Borrowed. */
    void (*log_fn)(void *ud, const char *line); /* NULL = silent; one line per connection event
                                   worth a log (closed for bad input, ignored events, requests) */
    void *log_ud;
} ct_wy_params;

ct_wy_params ct_wy_params_default(void);

/* "tcp://HOST:PORT" -> host[cap], *port (0..65535). CT_ERR_INVALID_ARG naming what is wrong
   (other schemes such as unix:// or stdio:// are not served). */
ct_status ct_wy_parse_uri(const char *uri, char *host, size_t cap, int *port, char *err, size_t errcap);

/* Binds and starts serving (engine and model borrowed; they outlive the server). Errors:
   CT_ERR_INVALID_ARG (params), CT_ERR_IO (bind/listen), CT_ERR_NOMEM. */
ct_status ct_wy_start(ct_engine *e, const ct_model *m, const ct_wy_params *p, ct_wy **out, char *err,
                      size_t errcap);

int ct_wy_port(const ct_wy *w);

/* Stops accepting, ends every connection (their streams are cancelled) and frees w. NULL is
   fine. Call before ct_engine_free. */
void ct_wy_stop(ct_wy *w);

#endif
