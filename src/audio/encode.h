/* Compressed audio out: MP3 (libmp3lame), Ogg Opus (libopus), AAC in ADTS and FLAC, encoded
   with FFmpeg's libavcodec and muxed with libavformat into a caller's byte sink as the audio
   arrives (nothing is buffered past one codec frame). WAV and raw PCM stay with audio/wav.h. */
#ifndef CT_AUDIO_ENCODE_H
#define CT_AUDIO_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum {
    CT_AF_WAV = 0, /* audio/wav.h */
    CT_AF_PCM,     /* raw s16le (audio/wav.h) */
    CT_AF_MP3,
    CT_AF_OPUS,    /* Ogg Opus */
    CT_AF_AAC,     /* ADTS */
    CT_AF_FLAC,
    CT_AF_COUNT
} ct_audio_format;

/* "wav", "pcm", "mp3", "opus", "aac", "flac" (also the response_format names of the OpenAI
   speech API); -1 for anything else. */
int ct_audio_format_parse(const char *name);
const char *ct_audio_format_name(int f);
/* The format a file name asks for by its extension (.wav .pcm/.raw .mp3 .opus/.ogg .aac .flac,
   case-insensitive); -1 when it has none of them. */
int ct_audio_format_from_path(const char *path);
/* The MIME type to serve it as. */
const char *ct_audio_format_mime(int f);

/* Receives encoded bytes; returns 0, or nonzero to stop the encoder (a write error). */
typedef int (*ct_audio_sink)(void *ud, const uint8_t *buf, size_t n);

typedef struct ct_audio_enc ct_audio_enc;

/* Opens an encoder for MP3, OPUS, AAC or FLAC (mono, sample_rate Hz) writing into sink;
   the container header goes out with the first packet. CT_ERR_UNSUPPORTED for WAV/PCM (use
   audio/wav.h) or a rate the codec cannot take; CT_ERR_NOMEM. */
ct_status ct_audio_enc_open(int fmt, int sample_rate, ct_audio_sink sink, void *ud, ct_audio_enc **out, char *err,
                            size_t errcap);

/* Encodes n samples (float, clamped to [-1, 1]); packets reach the sink as they are made.
   CT_ERR_IO when the sink refused bytes (the encoder is then failed: every later call fails). */
ct_status ct_audio_enc_write(ct_audio_enc *e, const float *pcm, size_t n, char *err, size_t errcap);

/* Encodes what is buffered, drains the codec and writes the container trailer. */
ct_status ct_audio_enc_finish(ct_audio_enc *e, char *err, size_t errcap);

/* Frees e (NULL is fine); an unfinished stream is abandoned, not finished. */
void ct_audio_enc_free(ct_audio_enc *e);

#endif
