/* Fuzz target: arbitrary bytes as a safetensors file; every tensor found must lie in bounds. */
#include <stdint.h>
#include <string.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_st_file *f = NULL;
    char err[256];
    if (ct_st_open_buffer(data, size, &f, err, sizeof err) == CT_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < ct_st_count(f); i++) {
            const ct_st_tensor *t = ct_st_at(f, i);
            const uint8_t *p = t->data;
            if (p < data || p + t->nbytes > data + size) __builtin_trap();
            if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
            if (ct_st_find(f, t->name) != t) __builtin_trap();
        }
        (void)sink;
    }
    ct_st_close(f);
    return 0;
}
