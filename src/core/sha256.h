/* SHA-256 (FIPS 180-4) in plain C, the project's one implementation: incremental hashing, files
   as lower-case hex, the codec id of a model directory (docs/CODES_WIRE.md, docs/EXPORT.md) and
   the model hash of voice files (docs/CLONING.md). */
#ifndef CT_CORE_SHA256_H
#define CT_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct {
    uint32_t h[8];
    uint64_t total;     /* bytes hashed so far */
    uint8_t buf[64];    /* pending partial block */
    size_t n;           /* bytes in buf */
} ct_sha256_ctx;

void ct_sha256_init(ct_sha256_ctx *c);
void ct_sha256_update(ct_sha256_ctx *c, const void *data, size_t len);
/* Writes the 32-byte digest; c must be re-initialised before reuse. */
void ct_sha256_final(ct_sha256_ctx *c, uint8_t out[32]);
/* digest[32] -> hex[65] (64 lower-case digits and a NUL). */
void ct_sha256_hex(const uint8_t digest[32], char hex[65]);
/* hex[65] of SHA-256(data[len]). */
void ct_sha256_buf(const void *data, size_t len, char hex[65]);

/* hex[65] receives the 64 hex digits of SHA-256(file at path) and a NUL. CT_ERR_IO naming
   the file when it cannot be opened or read (a directory or other non-regular file is refused,
   never waited on). */
ct_status ct_sha256_file(const char *path, char hex[65], char *err, size_t errcap);

/* The codec id of model_dir: "sha256:" + the hex SHA-256 of speech_tokenizer/model.safetensors
   (the codec weights), into out[cap] (cap >= 72). Errors as ct_sha256_file. */
ct_status ct_codec_id(const char *model_dir, char *out, size_t cap, char *err, size_t errcap);

#endif
