/* The streaming-text WebSocket endpoint GET /v1/audio/speech/stream (libwebsockets, on its own
   port next to the HTTP server), shaped like vLLM-Omni's: session.config, input.text deltas,
   input.done, session.close in; audio.start, binary s16le PCM frames, audio.done, session.done
   and error events out. Each utterance (input.text ... input.done) is one incremental-text
   stream on the server's engine (docs/SERVE.md "WebSocket"). */
#ifndef CT_SERVE_WS_H
#define CT_SERVE_WS_H

#include <stddef.h>

#include "codectalk.h"
#include "serve/http.h"

typedef struct ct_ws ct_ws;

typedef struct {
    const char *host;          /* IPv4 address to listen on (default "127.0.0.1") */
    int port;                  /* 0 = any free port (see ct_ws_port) */
    size_t max_message_bytes;  /* a client message over this closes with 1009 (default 65536) */
    int text_idle_timeout_ms;  /* an utterance with no text nor input.done for this long fails
                                  with an error event (default 30000) */
} ct_ws_params;

ct_ws_params ct_ws_params_default(void);

/* Starts the endpoint on the engine of h, with h's request checks, stream defaults and API key
   (ct_http_shared); h and e are borrowed and must outlive it. CT_ERR_IO when the port cannot be
   bound (the message names it). */
ct_status ct_ws_start(ct_engine *e, const ct_http *h, const ct_ws_params *p, ct_ws **out, char *err,
                      size_t errcap);

/* The bound TCP port. */
int ct_ws_port(const ct_ws *w);

/* Closes every connection (their streams are released) and frees w. NULL is fine. Call before
   ct_http_stop. */
void ct_ws_stop(ct_ws *w);

#endif
