/* WAV (RIFF, PCM16 or float32, mono) and raw s16le writers that stream sample by sample, the
   44-byte header they write (also the server's), and a strict WAV header parser. Samples are
   quantised by audio/pcm.h. */
#ifndef CT_WAV_H
#define CT_WAV_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

typedef enum { CT_WAV_PCM16 = 0, CT_WAV_FLOAT32 = 1, CT_WAV_RAW_S16LE = 2 } ct_wav_format;

#define CT_WAV_HEADER_BYTES 44
#define CT_WAV_STREAMING UINT64_MAX /* ct_wav_header: length unknown (a pipe or a stream) */

/* The 44-byte RIFF/WAVE header of a mono stream of `samples` samples (fmt PCM16 or FLOAT32);
   CT_WAV_STREAMING, or a length over the 32-bit limit, writes the streaming maximum: the largest
   whole number of samples that fits 0xFFFFFFFF - 36 data bytes (RIFF size = data + 36), which
   players and Python's wave read up to the end of the bytes that come. */
void ct_wav_header(uint8_t h[CT_WAV_HEADER_BYTES], int rate, ct_wav_format fmt, uint64_t samples);

typedef struct {
    FILE *f;            /* borrowed */
    ct_wav_format fmt;
    int rate;
    int seekable;       /* header sizes are patched on close when the file can seek */
    uint64_t samples;
    int failed;
} ct_wav_writer;

/* Starts a stream on f. For WAV formats a header is written now; on a pipe its sizes are set
   to the streaming maximum (ct_wav_header with CT_WAV_STREAMING). */
ct_status ct_wav_begin(ct_wav_writer *w, FILE *f, int rate, ct_wav_format fmt);

/* Appends n samples (float, clamped to [-1, 1] for PCM16). CT_ERR_IO on a short write. */
ct_status ct_wav_write(ct_wav_writer *w, const float *pcm, size_t n);

/* Flushes and, when seekable, writes the final sizes. Does not close f. */
ct_status ct_wav_end(ct_wav_writer *w);

/* Parses a WAV header in buf (for tests and reference-audio input): fills rate, channels,
   bits, float flag and the data offset/length. CT_ERR_FORMAT naming the problem otherwise. */
ct_status ct_wav_parse(const uint8_t *buf, size_t len, int *rate, int *channels, int *bits,
                       int *is_float, size_t *data_off, size_t *data_len, char *err,
                       size_t errcap);

#endif
