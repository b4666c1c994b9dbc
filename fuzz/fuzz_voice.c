/* Fuzz target: arbitrary bytes as a voice file (ct_voice_load_memory, read without a model);
   a voice that loads must be self-consistent and its data readable in full; a refusal names
   its reason. */
#include <stdint.h>
#include <string.h>

#include "codectalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_voice *v = NULL;
    char err[512];
    if (ct_voice_load_memory(NULL, data, size, &v, err, sizeof err) == CT_OK) {
        ct_voice_info i = ct_voice_get_info(v);
        if (i.xvector_len < 1 || i.ref_frames < 0 || (i.ref_frames && (!i.ref_text || !i.ref_text[0])) ||
            (!i.ref_frames && i.ref_text) || strlen(i.model_hash) != 64)
            __builtin_trap();
        ct_gen_params g = ct_gen_params_default();
        ct_voice_apply(v, &g, 0);
        volatile float sink = g.xvector[0] + g.xvector[i.xvector_len - 1];
        if (g.ref_frames) sink += (float)g.ref_codes[(size_t)g.ref_frames * (size_t)i.n_groups - 1];
        (void)sink;
        ct_voice_free(v);
    } else if (!err[0]) {
        __builtin_trap(); /* every refusal names its reason */
    }
    return 0;
}
