/* Fuzz target: arbitrary bytes as an ONNX model through the sanitizer (protobuf reader, graph
   rewrite, writer); it must never crash and anything it returns must parse again. */
#include <stdint.h>
#include <stdlib.h>

#include "export/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *out = NULL;
    size_t n = 0;
    char err[256];
    ct_sanitize_counts counts;
    if (ct_onnx_sanitize_mem(data, size, NULL, &out, &n, &counts, err, sizeof err) == CT_OK) {
        uint8_t *again = NULL;
        size_t m = 0;
        if (ct_onnx_sanitize_mem(out, n, NULL, &again, &m, &counts, err, sizeof err) != CT_OK)
            __builtin_trap(); /* our own output must be readable */
        free(again);
    }
    free(out);
    return 0;
}
