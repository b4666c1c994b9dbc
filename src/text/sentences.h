/* Splits long text into utterances at sentence boundaries (Latin and CJK punctuation,
   blank lines), never inside a UTF-8 sequence; over-long sentences split at commas/spaces. */
#ifndef CT_SENTENCES_H
#define CT_SENTENCES_H

#include <stddef.h>

typedef struct {
    size_t off, len; /* byte span in the input, trimmed of surrounding whitespace */
} ct_span;

/* Fills up to cap spans covering text[0..len) in order, each at most max_bytes long (when a
   break point exists) and none empty; returns the number of spans (may exceed cap: then only
   cap were written). */
size_t ct_split_sentences(const char *text, size_t len, size_t max_bytes, ct_span *spans,
                          size_t cap);

#endif
