/* Fuzz target: arbitrary bytes as a YAML deploy profile. Whatever loads must validate or fail
   cleanly, and its materialised YAML must load back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static ct_profile p, q;
    char err[1024];
    ct_profile_defaults(&p);
    if (ct_profile_load_yaml(&p, (const char *)data, size, "fuzz.yaml", "fuzz", err, sizeof err) != CT_OK) {
        if (!memchr(err, 0, sizeof err) || strncmp(err, "fuzz.yaml", 9) != 0) __builtin_trap();
        return 0;
    }
    (void)ct_profile_validate(&p, err, sizeof err);
    char *y = ct_profile_to_yaml(&p, (int)(size & 1), "fuzz");
    if (!y) return 0;
    ct_profile_defaults(&q);
    if (ct_profile_load_yaml(&q, y, strlen(y), "rt.yaml", "rt", err, sizeof err) != CT_OK) __builtin_trap();
    for (int k = 0; k < CT_PK_COUNT; k++)
        if (p.v[k].i != q.v[k].i || p.v[k].n != q.v[k].n) __builtin_trap();
    free(y);
    return 0;
}
