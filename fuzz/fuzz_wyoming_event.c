/* Fuzz target: arbitrary bytes as what a client sends to the Wyoming server, read event after
   event by ct_wy_parse (serve/wyoming_event.c) with small limits. Never a crash; verdicts are
   consistent: an event lies within the input, its data is an object and its payload inside
   it; every proper prefix of an event is "incomplete"; an event formatted again by
   ct_wy_format parses back to the same type, data and payload; a refusal names its problem. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve/wyoming_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_wy_limits lim = {512, 1024, 4096};
    uint8_t *b = malloc(size ? size : 1); /* exact size: reads past the input are caught */
    if (!b) return 0;
    memcpy(b, data, size);
    size_t off = 0;
    for (int guard = 0; guard < 64 && off < size; guard++) {
        ct_wy_event ev;
        size_t used = 0, rest = size - off;
        char err[256] = "";
        int r = ct_wy_parse(b + off, rest, &lim, &ev, &used, err, sizeof err);
        if (r < -1 || r > 1) __builtin_trap();
        if (r == -1) {
            if (!err[0]) __builtin_trap();
            break;
        }
        if (r == 0) {
            if (used != 0 && used <= rest) __builtin_trap();
            break;
        }
        if (used == 0 || used > rest || !ev.type[0] || !json_is_object(ev.data)) __builtin_trap();
        if (ev.payload_len > lim.max_payload || (ev.payload_len && (ev.payload < b + off ||
                                                                    ev.payload + ev.payload_len > b + off + used)))
            __builtin_trap();
        /* a proper prefix is incomplete, never an event or an error */
        ct_wy_event pe;
        size_t pu = 0;
        if (ct_wy_parse(b + off, used - 1, &lim, &pe, &pu, err, sizeof err) != 0) __builtin_trap();
        /* round trip */
        size_t n = 0;
        uint8_t *f = ct_wy_format(ev.type, ev.data, ev.payload, ev.payload_len, &n);
        if (f) {
            ct_wy_limits big = {1u << 20, 1u << 20, 1u << 20};
            ct_wy_event e2;
            size_t u2 = 0;
            int r2 = ct_wy_parse(f, n, &big, &e2, &u2, err, sizeof err);
            if (r2 != 1 || u2 != n || strcmp(e2.type, ev.type) || !json_equal(e2.data, ev.data) ||
                e2.payload_len != ev.payload_len || (ev.payload_len && memcmp(e2.payload, ev.payload, ev.payload_len)))
                __builtin_trap();
            ct_wy_event_clear(&e2);
            free(f);
        }
        ct_wy_event_clear(&ev);
        off += used;
    }
    free(b);
    return 0;
}
