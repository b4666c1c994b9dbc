/* Qwen2 byte-level BPE text tokenizer: loads vocab.json + merges.txt + tokenizer_config.json
 * from a checkpoint directory and turns UTF-8 text into token ids exactly like the Hugging Face
 * fast tokenizer (added tokens first, NFC, the Qwen2 split regex, byte-level BPE). */
#ifndef CT_TEXT_BPE_H
#define CT_TEXT_BPE_H

#include "core/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque tokenizer. Immutable after ct_bpe_load: every function below that takes a
 * `const ct_bpe *` may be called from any number of threads at once on the same object. */
typedef struct ct_bpe ct_bpe;

/* Loads <dir>/vocab.json, <dir>/merges.txt and <dir>/tokenizer_config.json (added tokens are
 * read from its `added_tokens_decoder`). On success *out owns a new tokenizer (release with
 * ct_bpe_free). Errors: CT_ERR_INVALID_ARG (NULL args, path too long), CT_ERR_IO (a file is
 * missing/unreadable), CT_ERR_FORMAT (bad JSON, a merge naming an unknown token, a vocab key
 * that is not byte-level, duplicate or negative ids, ...), CT_ERR_UNSUPPORTED (an added token
 * with lstrip/rstrip/single_word set), CT_ERR_NOMEM. A message naming the file and problem is
 * written to err[errcap] (may be NULL). On error *out is NULL. */
ct_status ct_bpe_load(const char *dir, ct_bpe **out, char *err, size_t errcap);

/* Releases a tokenizer; NULL is a no-op. */
void ct_bpe_free(ct_bpe *t);

/* Encodes text[0..len) (UTF-8; NUL bytes allowed). Added/special tokens are matched verbatim
 * on the raw text (leftmost, then longest); each stretch between them is NFC-normalised, split
 * with the Qwen2 pre-tokenizer regex and byte-level BPE encoded. Writes the first min(n, cap)
 * ids to ids (ids may be NULL when cap is 0) and the full count n to *n_out.
 * Returns CT_OK; CT_ERR_LIMIT if n > cap (*n_out still holds n); CT_ERR_INVALID_ARG for NULL
 * t/n_out, text NULL with len > 0, or invalid UTF-8 (message gives the byte offset; *n_out is
 * 0); CT_ERR_NOMEM. Thread-safe: uses only per-call scratch memory. */
ct_status ct_bpe_encode(const ct_bpe *t, const char *text, size_t len, int32_t *ids, size_t cap,
                        size_t *n_out, char *err, size_t errcap);

/* Incremental encoding: *out receives the length b of the longest prefix text[0..b) that may
 * be encoded now, i.e. for every continuation X (text + X valid UTF-8), encode(text + X) =
 * encode(text[0..b)) followed by encode(text[b..) + X). b is the start of the last pre-tokenizer
 * piece (that piece may still grow or split), moved back before a partial added token at the
 * end and, for non-ASCII text, to a character that NFC cannot merge with what precedes it
 * (checked by encoding both ways). text[0..len) must be valid UTF-8 (CT_ERR_INVALID_ARG
 * otherwise); CT_ERR_NOMEM. Thread-safe. */
ct_status ct_bpe_stable_prefix(const ct_bpe *t, const char *text, size_t len, size_t *out, char *err,
                               size_t errcap);

/* Id of an exact token string, or -1. Looked up in this order: an added token's content
 * ("<|im_start|>"), a regular token by its raw bytes ("assistant", "\n", " the"), a regular token
 * by its byte-level vocab.json spelling ("Ċ", "Ġthe"). token is NUL-terminated; NULL gives -1. */
int32_t ct_bpe_token_id(const ct_bpe *t, const char *token);

/* Number of ids (max id + 1, counting added tokens); 0 for NULL. */
int32_t ct_bpe_vocab_size(const ct_bpe *t);

/* Decodes ids[0..n) back to bytes: regular tokens through the inverse byte-level map, added
 * tokens as their content. Writes the first min(L, cap) bytes to out, plus a terminating NUL
 * when L < cap, and the full byte length L to *len_out. Returns CT_OK, CT_ERR_LIMIT if L > cap
 * (bytes were dropped), CT_ERR_INVALID_ARG for NULL args or an id that names no token.
 * The output is not guaranteed to be valid UTF-8 (an id sequence can split a character).
 * Thread-safe. */
ct_status ct_bpe_decode(const ct_bpe *t, const int32_t *ids, size_t n, char *out, size_t cap,
                        size_t *len_out);

#ifdef __cplusplus
}
#endif

#endif
