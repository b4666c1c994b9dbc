/* Wyoming protocol framing (the `wyoming` PyPI package, 1.7+): one event is a JSON header line
   {"type": T, "data": {...}, "data_length": N, "payload_length": M, "version": V} + "\n", then N
   bytes of extra JSON data (an object merged over "data") and M bytes of binary payload.
   Parsing works on a byte buffer so it can be fuzzed (fuzz/fuzz_wyoming_event.c). */
#ifndef CT_SERVE_WYOMING_EVENT_H
#define CT_SERVE_WYOMING_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* What one event may hold; anything over it is malformed (the connection is closed). */
typedef struct {
    size_t max_line;    /* header line, newline included (default 65536) */
    size_t max_data;    /* data_length (default 1 MiB) */
    size_t max_payload; /* payload_length (default 1 MiB: a TTS server receives no audio) */
} ct_wy_limits;

ct_wy_limits ct_wy_limits_default(void);

typedef struct {
    char type[64];            /* event type, e.g. "synthesize" */
    json_t *data;             /* object: "data" merged with the data_length JSON (owned) */
    const uint8_t *payload;   /* into the parsed buffer; NULL when payload_len is 0 */
    size_t payload_len;
} ct_wy_event;

/* Parses the event at the start of buf[0..n). Returns 1 with *ev filled (free with
   ct_wy_event_clear) and *used = its size in bytes; 0 when the event is incomplete (*used = the
   total size it needs when the header is known, else 0: the header line is not complete yet);
   -1 when it is malformed or over a limit (err names the problem). */
int ct_wy_parse(const uint8_t *buf, size_t n, const ct_wy_limits *lim, ct_wy_event *ev, size_t *used,
                char *err, size_t errcap);

void ct_wy_event_clear(ct_wy_event *ev);

/* Serializes an event as the Python package writes it (data as data_length extra JSON, a
   "version" field): header line + data + payload in one malloc'd buffer (*len bytes). data may
   be NULL or empty (no data part); payload may be NULL. NULL when out of memory. */
uint8_t *ct_wy_format(const char *type, const json_t *data, const void *payload, size_t payload_len, size_t *len);

#endif
