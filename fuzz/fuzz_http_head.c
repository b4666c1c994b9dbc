/* Fuzz target: arbitrary bytes as the first bytes of a connection, through the server's front
   gate checks (serve/gate.c): ct_http_head_check and, past a complete header, the chunked
   framing check. Never a crash; a verdict is consistent (a complete header lies within the
   input and the limit; a refusal carries a 4xx/5xx status, a code and a message that render as
   one OpenAI error JSON response). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve/gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const size_t max_head = 2048;
    char *b = malloc(size ? size : 1); /* exact size: reads past the input are caught */
    if (!b) return 0;
    memcpy(b, data, size);
    ct_head_result r;
    int v = ct_http_head_check(b, size, max_head, &r);
    if (v < -1 || v > 1) __builtin_trap();
    if (v == 1) {
        if (r.head_len == 0 || r.head_len > size || r.head_len > max_head || r.status >= 0) __builtin_trap();
        int c = ct_http_chunks_check(b + r.head_len, size - r.head_len);
        if (c < -1 || c > 1) __builtin_trap();
    } else if (v == -1) {
        if (r.status < 400 || r.status > 599 || !r.code[0] || !r.msg[0]) __builtin_trap();
        char out[1024];
        size_t n = ct_http_error_response(out, sizeof out, r.status, r.code, r.msg);
        const char *body = n ? strstr(out, "\r\n\r\n") : NULL;
        if (!body) __builtin_trap();
        json_error_t je;
        json_t *j = json_loads(body + 4, 0, &je);
        if (!j || !json_is_string(json_object_get(json_object_get(j, "error"), "message"))) __builtin_trap();
        json_decref(j);
    } else if (size >= max_head) {
        __builtin_trap(); /* no verdict on a full buffer */
    }
    free(b);
    return 0;
}
