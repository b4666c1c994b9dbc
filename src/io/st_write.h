/* Streaming safetensors writer: declare tensors, write the JSON header, then stream each
 * tensor's bytes in header order without holding the file in memory. */
#ifndef CT_ST_WRITE_H
#define CT_ST_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Element types the writer can declare (safetensors names BF16, F16, F32, I32, I8, U8). */
typedef enum { CT_STW_BF16 = 0, CT_STW_F16 = 1, CT_STW_F32 = 2, CT_STW_I32 = 3, CT_STW_I8 = 4, CT_STW_U8 = 5 } ct_stw_dtype;

#define CT_STW_MAX_DIMS 8

/* Opaque writer. Not thread-safe; one writer per output file. */
typedef struct ct_stw ct_stw;

/* Bytes per element of dt (1, 2 or 4); 0 for an unknown value. */
size_t ct_stw_dtype_size(ct_stw_dtype dt);

/* safetensors dtype string ("BF16", "F16", "F32", "I32", "I8", "U8"); "?" for an unknown value. */
const char *ct_stw_dtype_name(ct_stw_dtype dt);

/* Creates an empty writer in *out (owned; release with ct_stw_free).
 * Errors: CT_ERR_INVALID_ARG (out NULL), CT_ERR_NOMEM. */
ct_status ct_stw_create(ct_stw **out, char *err, size_t errcap);

/* Declares one tensor: name (copied; non-empty, not "__metadata__", unique), dtype, and
 * shape[ndim] (0 <= ndim <= CT_STW_MAX_DIMS, every dim >= 0). Only before ct_stw_begin.
 * Declaration index = number of earlier successful declarations (0-based).
 * Errors: CT_ERR_INVALID_ARG (bad name/dtype/shape, size overflow), CT_ERR_STATE (after
 * begin), CT_ERR_NOMEM. Duplicate names are reported by ct_stw_begin. */
ct_status ct_stw_declare(ct_stw *w, const char *name, ct_stw_dtype dt, int ndim,
                         const int64_t *shape, char *err, size_t errcap);

/* Adds a string pair to the header's __metadata__ (both copied; key non-empty and unique).
 * "format" replaces the default "pt". Only before ct_stw_begin.
 * Errors: CT_ERR_INVALID_ARG, CT_ERR_STATE (after begin), CT_ERR_NOMEM. */
ct_status ct_stw_meta(ct_stw *w, const char *key, const char *value, char *err, size_t errcap);

/* Pads the header so that the data (and so the first tensor in name order) start 64-byte
 * aligned in the file. Only before ct_stw_begin. */
void ct_stw_align64(ct_stw *w);

/* Sorts the tensors by name (byte order), assigns contiguous data_offsets in that order and
 * writes the 8-byte little-endian header length plus the JSON header (with
 * "__metadata__": {"format": "pt"} and the ct_stw_meta pairs, padded with spaces to a multiple of 8,
 * or after ct_stw_align64 so that the data start at a multiple of 64 bytes) to
 * "<path>.partial". ct_stw_finish renames it to path.
 * Errors: CT_ERR_STATE (called twice), CT_ERR_INVALID_ARG (duplicate name, NULL path),
 * CT_ERR_IO (open/write failed), CT_ERR_NOMEM. */
ct_status ct_stw_begin(ct_stw *w, const char *path, char *err, size_t errcap);

/* After begin: reports the tensor whose bytes are expected next (its declaration index in
 * *decl_index and the bytes it still needs in *remaining; either pointer may be NULL).
 * Zero-byte tensors are skipped. Returns 1 while bytes are expected, 0 when all tensors are
 * complete (or before begin). */
int ct_stw_next(const ct_stw *w, size_t *decl_index, uint64_t *remaining);

/* Appends nbytes of data to the current tensor (see ct_stw_next). A call may not run past
 * the end of the current tensor; split writes at tensor boundaries.
 * Errors: CT_ERR_STATE (not begun, finished, or a previous write failed),
 * CT_ERR_INVALID_ARG (more bytes than the current tensor still needs, data NULL),
 * CT_ERR_IO (write failed; the writer is then unusable). */
ct_status ct_stw_write(ct_stw *w, const void *data, size_t nbytes, char *err, size_t errcap);

/* Checks that every declared tensor received exactly its bytes, flushes, closes and renames
 * the partial file to its final path. Errors: CT_ERR_STATE (not begun / missing bytes; the
 * message names the first incomplete tensor), CT_ERR_IO. */
ct_status ct_stw_finish(ct_stw *w, char *err, size_t errcap);

/* Number of tensors declared so far. */
size_t ct_stw_count(const ct_stw *w);

/* Length of the JSON header including padding (valid after begin; 0 before). */
uint64_t ct_stw_header_len(const ct_stw *w);

/* Sum of all declared tensors' byte sizes. */
uint64_t ct_stw_data_len(const ct_stw *w);

/* Releases the writer (NULL allowed). If the file was begun but not finished, the partial
 * file is closed and removed. */
void ct_stw_free(ct_stw *w);

#endif
