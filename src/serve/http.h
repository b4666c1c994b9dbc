/* HTTP front end of the server (libmicrohttpd, thread per connection) over the public stream
   engine: POST /v1/audio/speech (whole WAV/PCM/codes, chunked raw audio or codes, or SSE events), GET
   /v1/models, GET/POST /v1/audio/voices, GET/DELETE /v1/audio/voices/NAME (cloned voices),
   GET /health, GET /metrics; bearer-token auth on every route
   but /health; OpenAI error JSON. Routes, fields and status codes: docs/SERVE.md. */
#ifndef CT_SERVE_HTTP_H
#define CT_SERVE_HTTP_H

#include <stddef.h>

#include "codectalk.h"
#include "serve/request.h"
#include "serve/voices.h"

typedef struct ct_http ct_http;

typedef struct {
    size_t size;
    const char *host;          /* IPv4 address or a name resolving to one (default "127.0.0.1") */
    int port;                  /* 0 = any free port (see ct_http_port) */
    const char *api_key;       /* NULL or "" = no auth */
    const char *model_id;      /* served id for /v1/models and the `model` field (required) */
    const char *codec_id;      /* the codec's id (ct_codec_id) sent in the header of every
                                  response_format "codes" stream (docs/CODES_WIRE.md); NULL = "" */
    int max_connections;       /* concurrent connections (default 64) */
    int connection_timeout_s;  /* idle timeout, and the bound on receiving one body (default 30) */
    size_t max_body_bytes;     /* request body limit -> 413 (default 65536) */
    int max_input_chars;       /* `input` limit (default CT_SPEECH_MAX_INPUT_CHARS) */
    int codec_chunk;           /* --codec-chunk: steady codec chunk in frames, 1..the engine's
                                  max_chunk_frames; 0 (default) = not given (ct_speech_schedule) */
    const char *schedule;      /* chunk schedule when neither the request nor codec_chunk picks
                                  one (a profile's); NULL = "exact". Copied. */
    const ct_stream_params *stream; /* every request's stream params before its own fields
                                  (windowed decode, left context, deadlines, utterance size: the
                                  deploy profile's); NULL = ct_stream_params_default(). Copied
                                  (its schedule is not used: see schedule). */
    int header_timeout_s;      /* a complete request header within this, also between keep-alive
                                  requests (default 10) */
    int write_timeout_s;       /* a streaming client that takes no bytes for this long loses its
                                  stream and connection (default 20) */
    int max_conn_per_ip;       /* connections per client address (default 32; < 0 = no limit) */
    int reserve_connections;   /* extra connections only for GET /health and /metrics (default 4) */
    const char *model_aliases; /* comma list of other ids `model` may name; NULL = the OpenAI
                                  ones (tts-1, tts-1-hd, gpt-4o-mini-tts); "" = none */
    const char *voice_aliases; /* comma list alias=voice added to the OpenAI voice table (alloy,
                                  ash, ... mapped to this model's voices; docs/SERVE.md); "" = none
                                  beyond the table; "-" = no aliases at all */
    const char *cors_origin;   /* NULL = no CORS; else every answer allows this origin ("*" = any)
                                  and OPTIONS preflights get 204 */
    void (*log_fn)(void *ud, const char *line); /* NULL = no access log; else one line per
                                  request: method, path, status, bytes, audio seconds, TTFA, RTF,
                                  elapsed ms (the library does not print: the caller does) */
    void *log_ud;
    /* voice cloning, on a Base model (docs/CLONING.md "Server API") */
    ct_voice_store *voices;    /* uploaded voices (--voices-dir); NULL = uploads off (POST and
                                  DELETE /v1/audio/voices answer 404). Borrowed. */
    const ct_speech_encoder *encoder; /* for ICL clones (reference codes); NULL = x-vector-only
                                  clones only. Borrowed. */
    size_t max_upload_bytes;   /* body limit of voice uploads and of speech requests on a Base
                                  model, which may carry ref_audio -> 413 (default 32 MiB) */
} ct_http_params;

ct_http_params ct_http_params_default(void);

/* Binds and starts serving. The engine and model are borrowed (must outlive the server).
   Errors: CT_ERR_INVALID_ARG (bad host/params: the message names it), CT_ERR_IO (bind/listen
   failed: the message names the address and errno), CT_ERR_INTERNAL (the HTTP library refused
   to start). */
ct_status ct_http_start(ct_engine *e, const ct_model *m, const ct_http_params *p, ct_http **out,
                        char *err, size_t errcap);

/* The bound TCP port. */
int ct_http_port(const ct_http *h);

/* What the WebSocket endpoint (serve/ws.c) shares with this server: the request checks (voices,
   languages, aliases, limits: *sx, borrowed while h lives), the stream defaults (*sp), the
   default schedule and the API key ("" = none). */
void ct_http_shared(const ct_http *h, ct_speech_ctx *sx, ct_stream_params *sp, const char **schedule,
                    const char **api_key);

/* Stops accepting, ends every connection (their streams are released) and frees h. NULL is
   fine. Call before ct_engine_free. */
void ct_http_stop(ct_http *h);

#endif
