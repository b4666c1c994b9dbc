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

/* Utterances for synthesis: the sentences of ct_split_sentences, neighbours merged while the
   merged span stays within max_bytes, so prosody spans several short sentences. Call once with
   spans NULL and cap 0 for the sentence count (an upper bound), then with spans[that count];
   returns the number of utterances written (the bound again when cap is too small). */
size_t ct_split_utterances(const char *text, size_t len, size_t max_bytes, ct_span *spans, size_t cap);

#endif
