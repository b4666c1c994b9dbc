/* SHA-256 of files (OpenSSL libcrypto) as lower-case hex: the program hashes of the codec
   manifest and the codec id of a model directory (docs/CODES_WIRE.md, docs/EXPORT.md). */
#ifndef CT_CORE_SHA256_H
#define CT_CORE_SHA256_H

#include <stddef.h>

#include "core/status.h"

/* hex[65] receives the 64 hex digits of SHA-256(file at path) and a NUL. CT_ERR_IO naming
   the file when it cannot be opened or read (a directory or other non-regular file is refused,
   never waited on), CT_ERR_INTERNAL when the digest fails. */
ct_status ct_sha256_file(const char *path, char hex[65], char *err, size_t errcap);

/* The codec id of model_dir: "sha256:" + the hex SHA-256 of speech_tokenizer/model.safetensors
   (the codec weights), into out[cap] (cap >= 72). Errors as ct_sha256_file. */
ct_status ct_codec_id(const char *model_dir, char *out, size_t cap, char *err, size_t errcap);

#endif
