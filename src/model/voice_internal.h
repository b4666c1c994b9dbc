/* The ct_voice object shared by voice.c (make, apply, model hash) and voice_file.c (the file). */
#ifndef CT_VOICE_INTERNAL_H
#define CT_VOICE_INTERNAL_H

#include <stdint.h>

#include "codectalk.h"

#define CT_VOICE_VERSION 1
#define CT_VOICE_FORMAT "codectalk-voice"
#define CT_VOICE_MAX_FRAMES 4096  /* reference codes per voice (~328 s at 12.5 Hz) */
#define CT_VOICE_MAX_XVEC 65536   /* x-vector width bound for files read without a model */
#define CT_VOICE_MAX_TEXT 65536   /* transcript bytes */

struct ct_voice {
    int version;
    int xvector_len;
    float *xvec;          /* [xvector_len] */
    int n_groups, ref_frames;
    int32_t *codes;       /* [ref_frames][n_groups], NULL for x-vector-only */
    char *ref_text;       /* NULL for x-vector-only */
    char model_hash[65];
    char *model_name;
    char audio_sha256[65];
    uint64_t n_samples;
    char *created_by;
};

/* Allocates a voice with copies of the parts (no validation); NULL when out of memory. */
ct_voice *ct_voice_alloc(int xvector_len, const float *xvec, int n_groups, int ref_frames,
                         const int32_t *codes, const char *ref_text, const char *model_name,
                         const char *created_by);

/* Checks parts against model m (Base kind, x-vector width, finite values, code groups and code
   range, transcript present with codes); CT_ERR_INVALID_ARG / CT_ERR_UNSUPPORTED naming what. */
ct_status ct_voice_check(const ct_model *m, int xvector_len, const float *xvec, int n_groups,
                         int ref_frames, const int32_t *codes, const char *ref_text, char *err,
                         size_t errcap);

/* The "transcript clearly shorter than the clip" rule (docs/CLONING.md): a transcript of fewer
   than CT_VOICE_MIN_TOKENS_PER_S text tokens per second of clip (speech runs at about 3 to 6
   tokens a second in the model's languages, so this flags a transcript covering well under
   half the clip). Returns 1 when text is short for a clip of seconds; *n_tokens (may be NULL)
   gets its token count. */
#define CT_VOICE_MIN_TOKENS_PER_S 1.5
int ct_voice_text_short(const ct_model *m, const char *text, double seconds, int *n_tokens);

/* "<size_tag>-<kind>" of m, e.g. "0b6-base", into buf[cap]. */
void ct_voice_model_name(const ct_model *m, char *buf, size_t cap);

#endif
