/* Reference audio in (tools library): a clip from a file path or a memory buffer (WAV, FLAC,
   Ogg/Vorbis, MP3 and whatever else libsndfile reads) -> mono float at 24 kHz, the rate the
   speaker encoder and the speech-tokenizer encoder take, plus the reference checks of
   docs/CLONING.md "Reference audio": refusals as errors, everything else as notes the caller
   prints. Decoding is libsndfile's; resampling is libsoxr at SOXR_HQ, the quality the official
   wrapper gets through librosa (docs/CLONING.md says why). Never prints. */
#ifndef CT_AUDIO_IN_H
#define CT_AUDIO_IN_H

#include <stddef.h>

#include "core/status.h"

#define CT_REF_RATE 24000          /* output rate */
#define CT_REF_MIN_SECONDS 1       /* shorter clips are refused */
#define CT_REF_MAX_SECONDS 30      /* longer clips are trimmed to their first 30 s (a note) */
#define CT_REF_SILENCE_PEAK 3.1623e-4f /* peak |x| below this (-70 dBFS) = digital silence */
#define CT_REF_CLIP_LEVEL 0.999f   /* a sample at or above this |x| counts as clipped */
#define CT_REF_CLIP_FRACTION 0.001 /* more than 0.1 % clipped samples -> a clipping note */
#define CT_REF_MAX_NOTES 4
#define CT_REF_NOTE_LEN 320

/* What a note is about (one of each at most). */
typedef enum {
    CT_REF_NOTE_TRIMMED = 1,   /* longer than CT_REF_MAX_SECONDS: the first 30 s kept */
    CT_REF_NOTE_DOWNMIXED = 2, /* several channels averaged to mono */
    CT_REF_NOTE_RESAMPLED = 4, /* another rate converted to 24 kHz */
    CT_REF_NOTE_CLIPPING = 8   /* the source looks clipped (the clone copies the distortion) */
} ct_ref_note_kind;

typedef struct {
    float *pcm;               /* [n] mono samples at CT_REF_RATE, owned (ct_ref_audio_free) */
    size_t n;
    int src_rate;             /* the file's rate and channel count */
    int src_channels;
    double src_seconds;       /* the file's duration before any trim */
    unsigned note_mask;       /* OR of the ct_ref_note_kind present */
    int n_notes;
    char notes[CT_REF_MAX_NOTES][CT_REF_NOTE_LEN]; /* one sentence each, naming the clip */
} ct_ref_audio;

/* Loads path. Errors (nothing allocated in *out): CT_ERR_IO / CT_ERR_FORMAT naming the file
   and libsndfile's reason when it cannot be opened or decoded, CT_ERR_INVALID_ARG for a clip
   shorter than 1 s or digital silence, CT_ERR_NOMEM. */
ct_status ct_ref_audio_load_file(const char *path, ct_ref_audio *out, char *err, size_t errcap);

/* The same from buf[len] (an upload held in memory; borrowed for the call only); name is
   what messages call the clip (NULL = "reference audio"). */
ct_status ct_ref_audio_load_memory(const void *buf, size_t len, const char *name,
                                   ct_ref_audio *out, char *err, size_t errcap);

/* Frees a->pcm and zeroes a; NULL is fine. */
void ct_ref_audio_free(ct_ref_audio *a);

/* Resamples in[n_in] (mono) from rate in_rate to CT_REF_RATE as the official path does
   (librosa.resample, soxr_hq): libsoxr SOXR_HQ in chunks, then zero-padded or cut to
   ceil(n_in * 24000 / in_rate) samples. *out is malloc'd (caller frees). CT_ERR_NOMEM, or
   CT_ERR_INTERNAL with libsoxr's message. */
ct_status ct_ref_resample(const float *in, size_t n_in, int in_rate, float **out, size_t *n_out,
                          char *err, size_t errcap);

#endif
