/* Cloned voices for the server and the command line (docs/CLONING.md): a reference clip made
   into a voice with every warning collected (ct_clone_make), and the server's voices directory
   of uploaded voices, NAME.voice files (ct_voice_store: names [A-Za-z0-9_-]{1,64}, so no path
   can leave the directory). */
#ifndef CT_SERVE_VOICES_H
#define CT_SERVE_VOICES_H

#include <jansson.h>
#include <stddef.h>

#include "audio/audio_in.h"
#include "codectalk.h"
#include "core/status.h"

#define CT_CLONE_MAX_WARN (CT_REF_MAX_NOTES + 1)

typedef struct {
    int n;
    char w[CT_CLONE_MAX_WARN][CT_REF_NOTE_LEN + 96]; /* one sentence each */
} ct_clone_warnings;

/* A voice from a loaded clip: ICL (x-vector, reference codes through enc, ref_text) unless
   x_vector_only. The clip's notes (trimmed, converted, clipping) and the short-transcript rule
   (ct_voice_text_short) go to *w. Refusals, CT_ERR_INVALID_ARG naming the fix: ICL without a
   transcript (the message names x-vector-only mode), a transcript with x_vector_only;
   CT_ERR_UNSUPPORTED: ICL without a speech encoder (enc NULL), a model that is not Base. */
ct_status ct_clone_make(const ct_model *m, const ct_speech_encoder *enc, const ct_ref_audio *clip,
                        const char *ref_text, int x_vector_only, ct_voice **out, ct_clone_warnings *w,
                        char *err, size_t errcap);

/* 1 when name matches [A-Za-z0-9_-]{1,64}. */
int ct_voice_name_ok(const char *name);

typedef struct ct_voice_store ct_voice_store;

/* Opens dir (created with its parents when missing; must be a writable directory).
   CT_ERR_IO naming dir. */
ct_status ct_voice_store_open(const char *dir, ct_voice_store **out, char *err, size_t errcap);
void ct_voice_store_free(ct_voice_store *s);

/* Loads NAME.voice checked against m. CT_ERR_INVALID_ARG for a bad name, CT_ERR_IO with
   "no voice named" when absent, else ct_voice_load's errors. */
ct_status ct_voice_store_get(ct_voice_store *s, const ct_model *m, const char *name, ct_voice **out, char *err,
                             size_t errcap);
/* Saves v as NAME.voice: CT_ERR_STATE when the name is taken (nothing written), else
   ct_voice_save's errors. Serialised with the other writers of the store. */
ct_status ct_voice_store_put(ct_voice_store *s, const char *name, const ct_voice *v, char *err, size_t errcap);
/* 1 when NAME.voice exists (a bad name: 0). */
int ct_voice_store_has(ct_voice_store *s, const char *name);
/* Removes NAME.voice: CT_ERR_IO with "no voice named" when absent. */
ct_status ct_voice_store_delete(ct_voice_store *s, const char *name, char *err, size_t errcap);
/* The uploaded voices, sorted by name: [{name, mode ("icl" | "x_vector_only"), ref_text (null
   for x-vector-only), ref_seconds, model_name, usable (made with m)}]; a file that does not
   load is listed with usable false and its error. */
json_t *ct_voice_store_list(ct_voice_store *s, const ct_model *m);
/* One voice's object as in the list ({..., "error"} when it does not load); NULL when absent. */
json_t *ct_voice_store_describe(ct_voice_store *s, const ct_model *m, const char *name);

#endif
