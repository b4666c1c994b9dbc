/* Fuzz target: arbitrary bytes as an uploaded reference clip (audio/audio_in.h, the memory
   entry point the server uses). It must never crash; a success must hand out finite samples at
   24 kHz, between 1 s and the 30 s limit, and notes that match the mask; a failure must leave
   nothing allocated and name the clip. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_ref_audio a;
    char err[512];
    err[0] = '\0';
    ct_status st = ct_ref_audio_load_memory(data, size, "fuzz.clip", &a, err, sizeof err);
    if (st != CT_OK) {
        if (a.pcm || a.n || !strstr(err, "fuzz.clip")) __builtin_trap();
        return 0;
    }
    if (!a.pcm || a.n < (size_t)CT_REF_RATE * CT_REF_MIN_SECONDS ||
        a.n > (size_t)CT_REF_RATE * CT_REF_MAX_SECONDS + 1 || a.n_notes < 0 ||
        a.n_notes > CT_REF_MAX_NOTES || (a.n_notes == 0) != (a.note_mask == 0))
        __builtin_trap();
    for (size_t i = 0; i < a.n; i++)
        if (!isfinite(a.pcm[i])) __builtin_trap();
    ct_ref_audio_free(&a);
    return 0;
}
