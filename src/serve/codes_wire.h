/* The codec-token wire format (docs/CODES_WIRE.md): length-prefixed binary records (a header
   with the stream's parameters, one record per frame of 16 codes, an end or error record),
   their encoder, a strict incremental decoder that names what is wrong with a stream, and the
   base64 coding of the SSE form. Pure functions, no I/O. */
#ifndef CT_SERVE_CODES_WIRE_H
#define CT_SERVE_CODES_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define CT_CODES_WIRE_VERSION 1
#define CT_CODES_MAX_GROUPS 64                                  /* codes per frame the decoder accepts */
#define CT_CODES_MAX_RECORD 4096                                /* payload bytes of one record the decoder accepts */
#define CT_CODES_ID_MAX 255                                     /* bytes of codec_id / model_id */
#define CT_CODES_CONTENT_TYPE "application/vnd.codectalk.codes" /* the binary stream's media type */

enum {
    CT_CODES_REC_HEADER = 1,
    CT_CODES_REC_FRAME = 2,
    CT_CODES_REC_END = 3,
    CT_CODES_REC_ERROR = 4,
    CT_CODES_REC_UTTERANCE = 5
};

/* The stream parameters of the header record. */
typedef struct {
    int sample_rate;                    /* 24000 */
    int samples_per_frame;              /* 1920 */
    int frame_rate_mhz;                 /* frame rate in millihertz, round(1000 * sample_rate / samples_per_frame):
                                           12500 (12.5 Hz); the decoder checks it */
    int n_groups;                       /* codes per frame: 16 */
    int codebook_size;                  /* every code is in [0, codebook_size): 2048 */
    char codec_id[CT_CODES_ID_MAX + 1]; /* "sha256:<hex>" of the codec weights (ct_codec_id) */
    char model_id[CT_CODES_ID_MAX + 1]; /* the served model id */
} ct_codes_header;

/* Bytes of one encoded frame record (length prefix included) for n_groups codes. */
size_t ct_codes_frame_bytes(int n_groups);

/* Encoders: each writes one whole record (4-byte length prefix + payload) into buf[cap] and
   returns its size, or 0 when it does not fit or an argument is out of range (a code outside
   [0, 65535], n_groups outside [1, CT_CODES_MAX_GROUPS], an id over CT_CODES_ID_MAX bytes). */
size_t ct_codes_put_header(uint8_t *buf, size_t cap, const ct_codes_header *h);
size_t ct_codes_put_frame(uint8_t *buf, size_t cap, uint32_t index, const int32_t *codes, int n_groups);
/* frames: how many frame records came before; stop: a ct_stop_reason. */
size_t ct_codes_put_end(uint8_t *buf, size_t cap, uint32_t frames, int stop);
/* The start of utterance index (1, 2, ...; utterance 0 starts with the stream): the frames
   after it decode from a fresh codec state. */
size_t ct_codes_put_utterance(uint8_t *buf, size_t cap, uint32_t index);
/* msg is cut to fit CT_CODES_MAX_RECORD. */
size_t ct_codes_put_error(uint8_t *buf, size_t cap, const char *msg);

/* Incremental decoder. Feed it the stream in pieces of any size; it calls back per record. */
typedef struct ct_codes_reader ct_codes_reader;

typedef struct {
    void *ud;
    /* The header (once, first). Return non-zero to stop (ct_codes_feed then returns
       CT_ERR_ABORTED with the callback's message in err, if it wrote one through msg). */
    int (*on_header)(void *ud, const ct_codes_header *h, char *msg, size_t msgcap);
    /* One frame: index (0, 1, 2, ... in order) and n_groups codes, each checked in
       [0, codebook_size). */
    int (*on_frame)(void *ud, uint32_t index, const int32_t *codes, int n_groups, char *msg, size_t msgcap);
    /* Utterance index (1, 2, ... in order) starts: reset the decoder before the next frame. */
    int (*on_utterance)(void *ud, uint32_t index, char *msg, size_t msgcap);
} ct_codes_cb;

/* NULL on out of memory. */
ct_codes_reader *ct_codes_reader_new(const ct_codes_cb *cb);
void ct_codes_reader_free(ct_codes_reader *r);

/* Feeds n bytes. CT_OK, or on the first bad record CT_ERR_FORMAT (a record before the header,
   a second header, an unknown version or record kind, a wrong payload length, a frame or
   utterance index out of order, a code out of range, bytes after the end record, a header that contradicts
   itself), CT_ERR_IO (an error record: the stream failed at its source; the message is
   the server's), CT_ERR_ABORTED (a callback stopped). The message, in err[errcap], names the record (by its byte
   offset), the field and the values. Once it failed every later call fails the same way. */
ct_status ct_codes_feed(ct_codes_reader *r, const uint8_t *p, size_t n, char *err, size_t errcap);

/* The end of the input: CT_OK when the end record was read; CT_ERR_FORMAT naming the
   truncation (inside a record, or no end record after N frames) otherwise. */
ct_status ct_codes_finish(ct_codes_reader *r, char *err, size_t errcap);

/* What the end record said (valid after ct_codes_finish returned CT_OK). */
int ct_codes_reader_frames(const ct_codes_reader *r);
int ct_codes_reader_stop(const ct_codes_reader *r);

/* Standard base64 (RFC 4648, with padding): dst needs 4 * ceil(n / 3) bytes; returns the
   count written (no terminator). */
size_t ct_b64_encode(char *dst, const uint8_t *src, size_t n);
/* Decodes src[n] into dst (at least 3 * n / 4 bytes); returns the byte count, or -1 for a
   character outside the alphabet, bad padding or a length not a multiple of 4. */
long ct_b64_decode(uint8_t *dst, const char *src, size_t n);

#endif
