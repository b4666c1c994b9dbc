/* POST /v1/audio/speech request body (docs/SERVE.md): strict JSON parsing and validation into a
   ct_speech_request, and the OpenAI error object {"error":{message,type,param,code}} used for
   every 4xx/5xx the server sends. Pure functions (jansson), no I/O. */
#ifndef CT_SERVE_REQUEST_H
#define CT_SERVE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "codectalk.h"
#include "core/status.h"

#define CT_SPEECH_MAX_INPUT_CHARS 4096   /* default limit on `input` (Unicode code points) */
#define CT_SPEECH_MAX_INSTRUCT_CHARS 4096

/* wav / pcm: audio; codes: the codec frames in the wire format of docs/CODES_WIRE.md (the server
   decodes no audio for them); encoded: mp3, opus, aac or flac (audio_format) made as the audio
   arrives (audio/encode.h). */
typedef enum { CT_RESP_WAV = 0, CT_RESP_PCM = 1, CT_RESP_CODES = 2, CT_RESP_ENCODED = 3 } ct_resp_format;

/* How the audio goes back: whole clip, chunked raw audio bytes, or SSE events. */
typedef enum { CT_MODE_FULL = 0, CT_MODE_AUDIO = 1, CT_MODE_SSE = 2 } ct_resp_mode;

/* An OpenAI-style API error and the HTTP status it is sent with. */
typedef struct {
    int http_status;   /* 400, 401, 404, 405, 413, 500, 503 */
    char message[512];
    char type[48];     /* "invalid_request_error", "authentication_error", "server_error", ... */
    char param[64];    /* offending field, "" = null */
    char code[48];     /* machine-readable code, "" = null */
} ct_api_error;

/* What the parser checks against: the served model. Arrays are borrowed. */
typedef struct {
    const char *model_id;           /* `model`, when given, must equal this (NULL = any) */
    const char *const *voices;      /* [n_voices] lower-case speaker names of the model */
    int n_voices;
    const char *const *languages;   /* [n_languages] lower-case language names ("auto" implied) */
    int n_languages;
    int max_input_chars;            /* <= 0: CT_SPEECH_MAX_INPUT_CHARS */
    int max_new_tokens_cap;         /* upper bound for max_new_tokens (<= 0: 1 << 20) */
    const char *const *model_aliases; /* [n_model_aliases] other ids `model` may name ("tts-1") */
    int n_model_aliases;
    const char *const *voice_aliases; /* [n_voice_aliases] names `voice` may use ("alloy") ... */
    const char *const *voice_targets; /* ... for these voices of the model */
    int n_voice_aliases;
    int clone;                      /* a Base model: `voice` names an uploaded voice and the
                                       one-off clone fields ref_audio / ref_text / x_vector_only
                                       are accepted (docs/CLONING.md "Server API") */
} ct_speech_ctx;

/* A validated request. Strings are owned (free with ct_speech_request_free). */
typedef struct {
    char *input;                 /* UTF-8, non-empty, <= max_input_chars code points */
    size_t input_chars;
    char voice[64];              /* a name from ctx->voices (lower case), "" when the model has none */
    char language[64];           /* "auto" or a name from ctx->languages */
    char *instructions;          /* NULL when absent */
    ct_resp_format format;
    int audio_format;            /* ct_audio_format of the body (WAV, PCM, MP3, OPUS, AAC, FLAC) */
    float speed;                 /* 0.25-4.0; 1 = as generated (audio/speed.h) */
    ct_resp_mode mode;
    int has_seed;
    uint64_t seed;               /* int64 as given, reinterpreted */
    int max_new_tokens;          /* 0 = model default */
    int initial_chunk_frames;    /* -1 = null (engine default), else >= 0 */
    float temperature;           /* < 0: model default; 0: greedy */
    float top_p;                 /* < 0: default */
    int top_k;                   /* < 0: default; 0 disables */
    float repetition_penalty;    /* < 0: default */
    int non_streaming;           /* -1 = null (model default), 0, 1 */
    int sentence_pause_ms;       /* -1 = null (the server's), else [0, 10000] (docs/TEXT.md) */
    int paragraph_pause_ms;      /* -1 = null (the server's), else [0, 10000] */
    /* cloning (ctx->clone only) */
    char clone_voice[65];        /* an uploaded voice's name ([A-Za-z0-9_-]{1,64}), "" = none */
    unsigned char *ref_audio;    /* decoded bytes of `ref_audio` (an audio file), NULL = none */
    size_t ref_audio_len;
    char *ref_text;              /* NULL when absent */
    int x_vector_only;
    ct_voice *cloned;            /* the cloned voice the server resolved for it (owned; freed
                                    with the request), NULL = none */
    int normalize;               /* -1 = null (the server's), 0, 1 (docs/TEXT.md "Normaliser") */
} ct_speech_request;

/* Parses and validates body[len] (need not be NUL-terminated). On success fills *out (caller
   frees with ct_speech_request_free) and returns CT_OK. On failure returns CT_ERR_INVALID_ARG
   (or CT_ERR_UNSUPPORTED for a valid but unsupported value, CT_ERR_LIMIT for input over the
   limit, CT_ERR_NOMEM) with *e filled (http_status 400 and the field in e->param); *out is
   left empty. Rules (docs/SERVE.md): the body is one JSON object; every known field has a fixed
   type (wrong type -> 400 naming it); unknown fields -> 400 "unknown field"; `input` required;
   `voice` (alias `speaker`) is a string or {"id": string}; an unknown voice or language -> 400
   listing the valid ones (on a clone model a voice name is an uploaded voice, looked up by the
   server; with ref_audio `voice` is not used); ref_audio is base64 or a data: URL with base64;
   response_format wav|pcm|mp3|opus|aac|flac|codes; speed 0.25-4.0 and sentence_pause_ms /
   paragraph_pause_ms 0-10000 (not with codes). */
ct_status ct_speech_request_parse(const char *body, size_t len, const ct_speech_ctx *ctx,
                                  ct_speech_request *out, ct_api_error *e);

/* The engine request of a validated speech request: text, voice, language, instructions,
   prompt layout, max_new_tokens and sampling (temperature 0 = greedy) into *g, whose strings
   then point into rq; rq->cloned applied (x_vector_only as asked). g->seed is set only when the
   request has one. */
void ct_speech_gen_params(const ct_speech_request *rq, ct_gen_params *g);

/* The chunk schedule (ct_stream_params.schedule) of a request, into buf[cap]; returns the
   string to use. initial_frames is the request's initial_codec_chunk_frames (-1 = null),
   codec_chunk the server's --codec-chunk (0 = not given). Neither given: dflt (the profile's
   schedule; NULL = "exact"). Else with IC = max(initial_frames, 1) (null: 1) and
   S = max(codec_chunk, 1): "exact" when IC = S = 1, otherwise "fixed:IC,max(S,IC)" (a fixed
   schedule's first chunk is never larger than its steady chunk); IC is capped at max_chunk
   (the engine's max_chunk_frames). With the exact decoder the samples are the same for every
   schedule; only when they are released changes. */
const char *ct_speech_schedule(int initial_frames, int codec_chunk, int max_chunk, const char *dflt, char *buf,
                               size_t cap);

/* Frees the owned strings and zeroes *r (NULL is fine). */
void ct_speech_request_free(ct_speech_request *r);

/* Fills *e (message formatted like printf). Returns e. */
ct_api_error *ct_api_error_set(ct_api_error *e, int http_status, const char *type,
                               const char *param, const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* The error as {"error":{"message","type","param","code"}} (param/code null when empty).
   malloc'd, NUL-terminated; NULL on OOM. */
char *ct_api_error_json(const ct_api_error *e);

/* Number of Unicode code points in s[len] if it is valid UTF-8 (no overlongs, surrogates or
   values above U+10FFFF), else -1. */
long ct_utf8_count(const char *s, size_t len);

#endif
