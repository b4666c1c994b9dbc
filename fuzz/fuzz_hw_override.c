/* Fuzz target: arbitrary bytes as a CODECTALK_HW_PROFILE JSON override. Whatever parses must
   survive the JSON round trip, classification, derivation and fingerprinting. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge/calibrate.h"
#include "edge/derive.h"
#include "edge/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static ct_hw_profile p, q;
    char err[512];
    if (ct_hw_from_json((const char *)data, size, "fuzz", &p, err, sizeof err) != CT_OK) {
        if (!memchr(err, 0, sizeof err)) __builtin_trap();
        return 0;
    }
    char *js = ct_hw_to_json(&p, 1);
    if (!js) return 0;
    if (ct_hw_from_json(js, strlen(js), "rt", &q, err, sizeof err) != CT_OK) __builtin_trap();
    free(js);
    if (q.flags != p.flags || q.n_clusters != p.n_clusters || q.ram_total_bytes != p.ram_total_bytes ||
        ct_hw_classify(&q) != ct_hw_classify(&p))
        __builtin_trap();
    ct_derive_in in = {(uint64_t)size * 1000003u, {28, 8, 128}, (int)(size % 7)};
    ct_derived d;
    ct_derive(&p, &in, &d);
    if ((d.kv_budget_bytes > d.budget_bytes && d.max_streams_mem > 1) || d.max_streams_mem < 1 || d.n_cpus < 0)
        __builtin_trap();
    char fp[17];
    if (ct_hw_fingerprint(&p, "fuzz", fp, err, sizeof err) == CT_OK && strlen(fp) != 16) __builtin_trap();
    return 0;
}
