/* Speech request parsing and validation, and the OpenAI error JSON (see request.h). */
#include "serve/request.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "audio/encode.h"
#include "audio/speed.h"
#include "serve/codes_wire.h" /* ct_b64_decode */
#include "text/langcode.h"

ct_api_error *ct_api_error_set(ct_api_error *e, int http_status, const char *type,
                               const char *param, const char *code, const char *fmt, ...) {
    e->http_status = http_status;
    snprintf(e->type, sizeof e->type, "%s", type ? type : "invalid_request_error");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return e;
}

/* A copy of s with every byte that does not start a valid UTF-8 sequence replaced by '?'
   (messages quote client bytes; JSON strings must be valid UTF-8). */
static json_t *utf8_string(const char *s) {
    char buf[sizeof ((ct_api_error *)0)->message];
    size_t n = strlen(s);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = (unsigned char)buf[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (k && i + k <= n && ct_utf8_count(buf + i, k) == 1) {
            i += k;
        } else {
            buf[i++] = '?';
        }
    }
    return json_string(buf);
}

char *ct_api_error_json(const ct_api_error *e) {
    json_t *inner = json_object();
    json_t *root = json_object();
    if (!inner || !root) {
        json_decref(inner);
        json_decref(root);
        return NULL;
    }
    json_object_set_new(inner, "message", utf8_string(e->message));
    json_object_set_new(inner, "type", utf8_string(e->type));
    json_object_set_new(inner, "param", e->param[0] ? utf8_string(e->param) : json_null());
    json_object_set_new(inner, "code", e->code[0] ? utf8_string(e->code) : json_null());
    json_object_set_new(root, "error", inner);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

long ct_utf8_count(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    long n = 0;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        int k;
        unsigned cp, min;
        if (c < 0x80) {
            i++;
            n++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            k = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return -1;
        }
        if (i + (size_t)k >= len) return -1; /* truncated sequence */
        for (int j = 1; j <= k; j++) {
            unsigned d = p[i + (size_t)j];
            if ((d & 0xC0) != 0x80) return -1;
            cp = (cp << 6) | (d & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
        i += (size_t)k + 1;
        n++;
    }
    return n;
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

static ct_status bad_type(ct_api_error *e, const char *field, const char *want, const json_t *v) {
    ct_api_error_set(e, 400, "invalid_request_error", field, "invalid_type",
                     "'%s' must be %s, got %s", field, want, type_name(v));
    return CT_ERR_INVALID_ARG;
}

static ct_status bad_value(ct_api_error *e, const char *field, const char *code, const char *fmt,
                           const char *a) {
    ct_api_error_set(e, 400, "invalid_request_error", field, code, fmt, field, a);
    return CT_ERR_INVALID_ARG;
}

static void lower_copy(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = 0;
}

/* "a, b, c" of names into buf (truncated with "..." when long). */
static void list_names(char *buf, size_t cap, const char *const *names, int n, const char *first) {
    size_t k = 0;
    buf[0] = 0;
    if (first) k += (size_t)snprintf(buf, cap, "%s", first);
    for (int i = 0; i < n && k < cap; i++) {
        int w = snprintf(buf + k, cap - k, "%s%s", k ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= cap - k) {
            if (cap > 4) memcpy(buf + cap - 4, "...", 4);
            return;
        }
        k += (size_t)w;
    }
}

static int find_name(const char *const *names, int n, const char *v) {
    for (int i = 0; i < n; i++)
        if (names[i] && strcasecmp(names[i], v) == 0) return i;
    return -1;
}

/* A number field in [lo, hi] (lo_open: lo excluded); null = keep default. */
static ct_status num_field(json_t *v, const char *name, double lo, int lo_open, double hi, float *dst,
                           ct_api_error *e) {
    if (json_is_null(v)) return CT_OK;
    if (!json_is_number(v)) return bad_type(e, name, "a number", v);
    double d = json_number_value(v);
    if (!(d <= hi) || (lo_open ? !(d > lo) : !(d >= lo))) {
        ct_api_error_set(e, 400, "invalid_request_error", name, "invalid_value",
                         "'%s' must be in %s%g, %g], got %g", name, lo_open ? "(" : "[", lo, hi, d);
        return CT_ERR_INVALID_ARG;
    }
    *dst = (float)d;
    return CT_OK;
}

static ct_status int_field(json_t *v, const char *name, long long lo, long long hi, int *dst,
                           ct_api_error *e) {
    if (json_is_null(v)) return CT_OK;
    if (!json_is_integer(v)) return bad_type(e, name, "an integer", v);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) {
        ct_api_error_set(e, 400, "invalid_request_error", name, "invalid_value",
                         "'%s' must be in [%lld, %lld], got %lld", name, lo, hi, x);
        return CT_ERR_INVALID_ARG;
    }
    *dst = (int)x;
    return CT_OK;
}

static ct_status voice_field(json_t *v, const char *name, const char **out, ct_api_error *e) {
    if (json_is_null(v)) return CT_OK;
    if (json_is_object(v)) {
        json_t *id = json_object_get(v, "id");
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (strcmp(k, "id") != 0 && strcmp(k, "name") != 0) {
                ct_api_error_set(e, 400, "invalid_request_error", name, "unknown_field",
                                 "'%s' object: unknown field '%s' (expected {\"id\": string})", name, k);
                return CT_ERR_INVALID_ARG;
            }
        }
        if (!id) id = json_object_get(v, "name");
        if (!json_is_string(id)) return bad_type(e, name, "a string or {\"id\": string}", id ? id : v);
        v = id;
    }
    if (!json_is_string(v)) return bad_type(e, name, "a string or {\"id\": string}", v);
    *out = json_string_value(v);
    return CT_OK;
}

void ct_speech_request_free(ct_speech_request *r) {
    if (!r) return;
    free(r->input);
    free(r->instructions);
    free(r->ref_audio);
    free(r->ref_text);
    ct_voice_free(r->cloned);
    memset(r, 0, sizeof *r);
}

static int voice_name_ok(const char *n) {
    size_t l = strlen(n);
    if (l < 1 || l > 64) return 0;
    for (size_t i = 0; i < l; i++)
        if (!isalnum((unsigned char)n[i]) && n[i] != '_' && n[i] != '-') return 0;
    return 1;
}

/* `ref_audio`: base64, or a data: URL ("data:<type>;base64,<base64>"), decoded into r. */
static ct_status ref_audio_field(json_t *v, ct_speech_request *r, ct_api_error *e) {
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= 5 && !strncasecmp(s, "data:", 5)) {
        const char *comma = memchr(s, ',', n);
        if (!comma || comma - s < 12 || strncasecmp(comma - 7, ";base64", 7) != 0)
            return bad_value(e, "ref_audio", "invalid_value", "'%s' is a data: URL without ';base64,'%s", "");
        n -= (size_t)(comma + 1 - s);
        s = comma + 1;
    }
    if (n == 0) return bad_value(e, "ref_audio", "invalid_value", "'%s' is empty%s", "");
    r->ref_audio = malloc(n / 4 * 3 + 3);
    if (!r->ref_audio) {
        ct_api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return CT_ERR_NOMEM;
    }
    long got = ct_b64_decode(r->ref_audio, s, n);
    if (got <= 0)
        return bad_value(e, "ref_audio", "invalid_value", "'%s' is not base64 (nor a data: URL holding base64)%s", "");
    r->ref_audio_len = (size_t)got;
    return CT_OK;
}

static ct_status parse_obj(json_t *root, const ct_speech_ctx *ctx, ct_speech_request *r,
                           ct_api_error *e) {
    int max_chars = ctx->max_input_chars > 0 ? ctx->max_input_chars : CT_SPEECH_MAX_INPUT_CHARS;
    int tok_cap = ctx->max_new_tokens_cap > 0 ? ctx->max_new_tokens_cap : (1 << 20);
    const char *voice = NULL, *speaker = NULL, *language = NULL, *fmt = NULL, *sfmt = NULL;
    int stream = 0;
    json_t *input = NULL, *instr = NULL, *ref_audio = NULL, *ref_text = NULL;
    const char *key;
    json_t *v;
    ct_status st;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "input") == 0) {
            if (!json_is_string(v)) return bad_type(e, "input", "a string", v);
            input = v;
        } else if (strcmp(key, "model") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, "model", "a string", v);
            if (ctx->model_id && strcmp(json_string_value(v), ctx->model_id) != 0 &&
                find_name(ctx->model_aliases, ctx->n_model_aliases, json_string_value(v)) < 0) {
                ct_api_error_set(e, 404, "invalid_request_error", "model", "model_not_found",
                                 "model '%.200s' is not served here (this server serves '%.200s'%s)",
                                 json_string_value(v), ctx->model_id,
                                 ctx->n_model_aliases ? " and its aliases, GET /v1/models" : "");
                return CT_ERR_INVALID_ARG;
            }
        } else if (strcmp(key, "voice") == 0) {
            if ((st = voice_field(v, "voice", &voice, e)) != CT_OK) return st;
        } else if (strcmp(key, "speaker") == 0) {
            if ((st = voice_field(v, "speaker", &speaker, e)) != CT_OK) return st;
        } else if (strcmp(key, "language") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, "language", "a string", v);
            language = json_string_value(v);
        } else if (strcmp(key, "instructions") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, "instructions", "a string", v);
            instr = v;
        } else if (strcmp(key, "response_format") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, "response_format", "a string", v);
            fmt = json_string_value(v);
        } else if (strcmp(key, "stream") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_boolean(v)) return bad_type(e, "stream", "a boolean", v);
            stream = json_is_true(v);
        } else if (strcmp(key, "stream_format") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, "stream_format", "a string", v);
            sfmt = json_string_value(v);
        } else if (strcmp(key, "seed") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_integer(v)) return bad_type(e, "seed", "an integer", v);
            r->has_seed = 1;
            r->seed = (uint64_t)(int64_t)json_integer_value(v);
        } else if (strcmp(key, "max_new_tokens") == 0) {
            if ((st = int_field(v, "max_new_tokens", 1, tok_cap, &r->max_new_tokens, e)) != CT_OK) return st;
        } else if (strcmp(key, "initial_codec_chunk_frames") == 0) {
            if ((st = int_field(v, "initial_codec_chunk_frames", 0, 1000, &r->initial_chunk_frames, e)) !=
                CT_OK)
                return st;
        } else if (strcmp(key, "temperature") == 0) {
            if ((st = num_field(v, "temperature", 0, 0, 10, &r->temperature, e)) != CT_OK) return st;
        } else if (strcmp(key, "top_p") == 0) {
            if ((st = num_field(v, "top_p", 0, 1, 1, &r->top_p, e)) != CT_OK) return st;
        } else if (strcmp(key, "top_k") == 0) {
            if ((st = int_field(v, "top_k", 0, 1 << 20, &r->top_k, e)) != CT_OK) return st;
        } else if (strcmp(key, "repetition_penalty") == 0) {
            if ((st = num_field(v, "repetition_penalty", 0, 1, 10, &r->repetition_penalty, e)) != CT_OK)
                return st;
        } else if (strcmp(key, "sentence_pause_ms") == 0) {
            if ((st = int_field(v, "sentence_pause_ms", 0, 10000, &r->sentence_pause_ms, e)) != CT_OK) return st;
        } else if (strcmp(key, "paragraph_pause_ms") == 0) {
            if ((st = int_field(v, "paragraph_pause_ms", 0, 10000, &r->paragraph_pause_ms, e)) != CT_OK) return st;
        } else if (strcmp(key, "normalize") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_boolean(v)) return bad_type(e, "normalize", "a boolean or null", v);
            r->normalize = json_is_true(v);
        } else if (strcmp(key, "non_streaming_mode") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_boolean(v)) return bad_type(e, "non_streaming_mode", "a boolean or null", v);
            r->non_streaming = json_is_true(v);
        } else if (strcmp(key, "speed") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_number(v)) return bad_type(e, "speed", "a number", v);
            double sv = json_number_value(v);
            if (!(sv >= CT_SPEED_MIN && sv <= CT_SPEED_MAX)) {
                ct_api_error_set(e, 400, "invalid_request_error", "speed", "invalid_value",
                                 "'speed' must be in [0.25, 4.0], got %g", sv);
                return CT_ERR_INVALID_ARG;
            }
            r->speed = (float)sv;
        } else if (strcmp(key, "sample_rate") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_integer(v)) return bad_type(e, "sample_rate", "an integer", v);
            if (json_integer_value(v) != 24000) {
                ct_api_error_set(e, 400, "invalid_request_error", "sample_rate", "unsupported_value",
                                 "'sample_rate' must be 24000 (the model's native rate), got %lld",
                                 (long long)json_integer_value(v));
                return CT_ERR_UNSUPPORTED;
            }
        } else if (strcmp(key, "ref_audio") == 0 || strcmp(key, "ref_text") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, key, "a string", v);
            *(key[4] == 'a' ? &ref_audio : &ref_text) = v;
        } else if (strcmp(key, "x_vector_only") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_boolean(v)) return bad_type(e, "x_vector_only", "a boolean", v);
            r->x_vector_only = json_is_true(v);
        } else if (strcmp(key, "task_type") == 0 || strcmp(key, "user") == 0) {
            if (json_is_null(v)) continue;
            if (!json_is_string(v)) return bad_type(e, key, "a string", v);
        } else {
            ct_api_error_set(e, 400, "invalid_request_error", key, "unknown_field",
                             "unknown field '%.100s'", key);
            return CT_ERR_INVALID_ARG;
        }
    }
    if (!input) {
        ct_api_error_set(e, 400, "invalid_request_error", "input", "missing_field",
                         "'input' is required");
        return CT_ERR_INVALID_ARG;
    }
    const char *in = json_string_value(input);
    size_t in_len = json_string_length(input);
    if (memchr(in, 0, in_len)) return bad_value(e, "input", "invalid_value", "'%s' contains a NUL character%s", "");
    long nch = ct_utf8_count(in, in_len);
    if (nch < 0) return bad_value(e, "input", "invalid_value", "'%s' is not valid UTF-8%s", "");
    size_t lead = 0;
    while (lead < in_len && isspace((unsigned char)in[lead])) lead++;
    if (lead == in_len) return bad_value(e, "input", "empty_input", "'%s' is empty%s", "");
    if (nch > max_chars) {
        ct_api_error_set(e, 400, "invalid_request_error", "input", "input_too_long",
                         "'input' has %ld characters; the limit is %d", nch, max_chars);
        return CT_ERR_LIMIT;
    }
    if (instr) {
        size_t il = json_string_length(instr);
        const char *is = json_string_value(instr);
        long ic = memchr(is, 0, il) ? -1 : ct_utf8_count(is, il);
        if (ic < 0) return bad_value(e, "instructions", "invalid_value", "'%s' is not valid UTF-8 text%s", "");
        if (ic > CT_SPEECH_MAX_INSTRUCT_CHARS) {
            ct_api_error_set(e, 400, "invalid_request_error", "instructions", "input_too_long",
                             "'instructions' has %ld characters; the limit is %d", ic,
                             CT_SPEECH_MAX_INSTRUCT_CHARS);
            return CT_ERR_LIMIT;
        }
    }
    /* voice */
    if (voice && speaker && strcasecmp(voice, speaker) != 0) {
        ct_api_error_set(e, 400, "invalid_request_error", "speaker", "conflicting_fields",
                         "'voice' ('%.60s') and its alias 'speaker' ('%.60s') differ", voice, speaker);
        return CT_ERR_INVALID_ARG;
    }
    if (!voice) voice = speaker;
    char names[400];
    if ((ref_audio || ref_text || r->x_vector_only) && !ctx->clone) {
        ct_api_error_set(e, 400, "invalid_request_error", ref_audio ? "ref_audio" : ref_text ? "ref_text" : "x_vector_only",
                         "unsupported_field", "voice cloning (ref_audio, ref_text, x_vector_only) needs a Base model");
        return CT_ERR_UNSUPPORTED;
    }
    if (ctx->clone && ref_audio) {
        /* a one-off clone: the clip is the voice (the OpenAI SDK sends a `voice` regardless) */
        if ((st = ref_audio_field(ref_audio, r, e)) != CT_OK) return st;
    } else if (ctx->clone && (ref_text || (r->x_vector_only && !voice))) {
        return bad_value(e, ref_text ? "ref_text" : "x_vector_only", "missing_field",
                         "'%s' applies to a clone: give ref_audio (or, for x_vector_only, an uploaded voice)%s", "");
    } else if (ctx->clone && voice) {
        if (!voice_name_ok(voice)) {
            ct_api_error_set(e, 400, "invalid_request_error", "voice", "unknown_voice",
                             "'%.60s' is not a voice name (1 to 64 of A-Z a-z 0-9 _ -; GET /v1/audio/voices lists them)",
                             voice);
            return CT_ERR_INVALID_ARG;
        }
        snprintf(r->clone_voice, sizeof r->clone_voice, "%s", voice);
    } else if (ctx->n_voices > 0) {
        if (!voice) {
            int vi = find_name(ctx->voices, ctx->n_voices, "vivian");
            voice = ctx->voices[vi >= 0 ? vi : 0];
        }
        int vi = find_name(ctx->voices, ctx->n_voices, voice);
        int ai = vi < 0 ? find_name(ctx->voice_aliases, ctx->n_voice_aliases, voice) : -1;
        if (ai >= 0) vi = find_name(ctx->voices, ctx->n_voices, ctx->voice_targets[ai]); /* "alloy" -> a speaker */
        if (vi < 0) {
            list_names(names, sizeof names, ctx->voices, ctx->n_voices, NULL);
            ct_api_error_set(e, 400, "invalid_request_error", "voice", "unknown_voice",
                             "unknown voice '%.60s'; available voices: %s%s", voice, names,
                             ctx->n_voice_aliases ? " (and the aliases of GET /v1/audio/voices)" : "");
            return CT_ERR_INVALID_ARG;
        }
        lower_copy(r->voice, sizeof r->voice, ctx->voices[vi]);
    } else if (voice) {
        ct_api_error_set(e, 400, "invalid_request_error", "voice", "unknown_voice",
                         "this model has no preset voices (got '%.60s')", voice);
        return CT_ERR_INVALID_ARG;
    }
    if (ref_text) {
        size_t tl = json_string_length(ref_text);
        const char *ts = json_string_value(ref_text);
        long tc = memchr(ts, 0, tl) ? -1 : ct_utf8_count(ts, tl);
        if (tc < 0) return bad_value(e, "ref_text", "invalid_value", "'%s' is not valid UTF-8 text%s", "");
        if (tc > CT_SPEECH_MAX_INSTRUCT_CHARS) {
            ct_api_error_set(e, 400, "invalid_request_error", "ref_text", "input_too_long",
                             "'ref_text' has %ld characters; the limit is %d", tc, CT_SPEECH_MAX_INSTRUCT_CHARS);
            return CT_ERR_LIMIT;
        }
        if (!(r->ref_text = strdup(ts))) {
            ct_api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
            return CT_ERR_NOMEM;
        }
    }
    /* language */
    snprintf(r->language, sizeof r->language, "auto");
    if (language && strcasecmp(language, "auto") != 0) {
        int li = find_name(ctx->languages, ctx->n_languages, language);
        if (li < 0 && ct_language_from_code(language)) /* "en", "en-US", "de-DE" */
            li = find_name(ctx->languages, ctx->n_languages, ct_language_from_code(language));
        if (li < 0) {
            list_names(names, sizeof names, ctx->languages, ctx->n_languages, "auto");
            ct_api_error_set(e, 400, "invalid_request_error", "language", "unknown_language",
                             "unknown language '%.60s'; available: %s", language, names);
            return CT_ERR_INVALID_ARG;
        }
        lower_copy(r->language, sizeof r->language, ctx->languages[li]);
    }
    /* formats */
    r->format = CT_RESP_WAV;
    r->audio_format = CT_AF_WAV;
    if (fmt) {
        int af = ct_audio_format_parse(fmt);
        if (strcmp(fmt, "codes") == 0) r->format = CT_RESP_CODES;
        else if (af == CT_AF_WAV || af == CT_AF_PCM) r->format = af == CT_AF_WAV ? CT_RESP_WAV : CT_RESP_PCM;
        else if (af >= 0) r->format = CT_RESP_ENCODED;
        else {
            ct_api_error_set(e, 400, "invalid_request_error", "response_format", "invalid_value",
                             "response_format must be one of wav, pcm, mp3, opus, aac, flac, codes; got '%.60s'", fmt);
            return CT_ERR_INVALID_ARG;
        }
        if (af >= 0) r->audio_format = af;
    }
    if (r->format == CT_RESP_CODES && r->speed != 1.0f)
        return bad_value(e, "speed", "invalid_value", "'%s' applies to audio, not to response_format 'codes'",
                         "speed");
    if (r->format == CT_RESP_CODES && (r->sentence_pause_ms > 0 || r->paragraph_pause_ms > 0))
        return bad_value(e, r->sentence_pause_ms > 0 ? "sentence_pause_ms" : "paragraph_pause_ms", "invalid_value",
                         "'%s' applies to audio, not to response_format 'codes'",
                         r->sentence_pause_ms > 0 ? "sentence_pause_ms" : "paragraph_pause_ms");
    r->mode = stream ? CT_MODE_SSE : CT_MODE_FULL;
    if (sfmt) {
        if (strcmp(sfmt, "audio") == 0) r->mode = CT_MODE_AUDIO;
        else if (strcmp(sfmt, "sse") == 0) r->mode = CT_MODE_SSE;
        else
            return bad_value(e, "stream_format", "invalid_value", "'%s' must be 'sse' or 'audio', got '%.60s'",
                             sfmt);
    }
    r->input = strdup(in);
    r->input_chars = (size_t)nch;
    if (instr) r->instructions = strdup(json_string_value(instr));
    if (!r->input || (instr && !r->instructions)) {
        ct_api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return CT_ERR_NOMEM;
    }
    return CT_OK;
}

ct_status ct_speech_request_parse(const char *body, size_t len, const ct_speech_ctx *ctx,
                                  ct_speech_request *out, ct_api_error *e) {
    memset(out, 0, sizeof *out);
    out->initial_chunk_frames = -1;
    out->speed = 1.0f;
    out->temperature = out->top_p = out->repetition_penalty = -1.0f;
    out->top_k = -1;
    out->non_streaming = -1;
    out->sentence_pause_ms = out->paragraph_pause_ms = out->normalize = -1;
    if (!body || !ctx) {
        ct_api_error_set(e, 400, "invalid_request_error", NULL, "invalid_json", "empty request body");
        return CT_ERR_INVALID_ARG;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        ct_api_error_set(e, 400, "invalid_request_error", NULL, "invalid_json",
                         "request body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                         je.column);
        return CT_ERR_INVALID_ARG;
    }
    ct_status st;
    if (!json_is_object(root)) {
        ct_api_error_set(e, 400, "invalid_request_error", NULL, "invalid_json",
                         "request body must be a JSON object, got %s", type_name(root));
        st = CT_ERR_INVALID_ARG;
    } else {
        st = parse_obj(root, ctx, out, e);
    }
    json_decref(root);
    if (st != CT_OK) {
        ct_speech_request_free(out);
        out->initial_chunk_frames = -1;
        out->non_streaming = -1;
        out->sentence_pause_ms = out->paragraph_pause_ms = out->normalize = -1;
    }
    return st;
}

void ct_speech_gen_params(const ct_speech_request *rq, ct_gen_params *g) {
    g->text = rq->input;
    if (rq->cloned) ct_voice_apply(rq->cloned, g, rq->x_vector_only);
    g->speaker = rq->voice[0] ? rq->voice : NULL;
    g->language = rq->language;
    g->instruct = rq->instructions;
    g->non_streaming = rq->non_streaming;
    if (rq->has_seed) g->seed = rq->seed;
    if (rq->max_new_tokens > 0) g->max_new_tokens = rq->max_new_tokens;
    if (rq->temperature == 0.0f) g->greedy = 1;
    else if (rq->temperature > 0) g->temperature = rq->temperature;
    if (rq->top_p > 0) g->top_p = rq->top_p;
    if (rq->top_k >= 0) g->top_k = rq->top_k;
    if (rq->repetition_penalty > 0) g->repetition_penalty = rq->repetition_penalty;
}

const char *ct_speech_schedule(int initial_frames, int codec_chunk, int max_chunk, const char *dflt, char *buf,
                               size_t cap) {
    if (initial_frames < 0 && codec_chunk <= 0) return dflt ? dflt : "exact";
    int ic = initial_frames > 1 ? initial_frames : 1, steady = codec_chunk > 1 ? codec_chunk : 1;
    if (max_chunk >= 1 && ic > max_chunk) ic = max_chunk;
    if (ic == 1 && steady == 1) return "exact";
    snprintf(buf, cap, "fixed:%d,%d", ic, steady > ic ? steady : ic);
    return buf;
}
