/* Splits long text into sentences and utterances (docs/TEXT.md "Sentences"): Latin and CJK
   terminators, abbreviations, initials, decimals, times, URLs, ellipses, closing quotes and
   brackets; blank lines are hard paragraph boundaries; never inside a UTF-8 sequence and, when
   the length limit forces a split, at the last clause punctuation or space, never mid-word. */
#ifndef CT_SENTENCES_H
#define CT_SENTENCES_H

#include <stddef.h>

typedef struct {
    size_t off, len; /* byte span in the input, trimmed of surrounding whitespace */
    int para;        /* 1: a paragraph break (blank line) separates it from the span before */
} ct_span;

/* Fills up to cap spans covering text[0..len) in order, each at most max_bytes long (max_bytes
   below 8 counts as 8) unless a single word is longer (then it is cut at a grapheme boundary),
   none empty; returns the number of spans (may exceed cap: then only cap were written). The
   text need not be valid UTF-8 (a bad byte counts as one character). */
size_t ct_split_sentences(const char *text, size_t len, size_t max_bytes, ct_span *spans, size_t cap);

/* Utterances for synthesis: the sentences of ct_split_sentences, neighbours merged while the
   merged span stays within max_bytes and no paragraph break lies between them, so prosody spans
   several short sentences. Call once with spans NULL and cap 0 for the sentence count (an upper
   bound), then with spans[that count]; returns the number of utterances written (the bound
   again when cap is too small). */
size_t ct_split_utterances(const char *text, size_t len, size_t max_bytes, ct_span *spans, size_t cap);

/* 1 when code point c is written without spaces between words (Han, kana, CJK punctuation,
   full-width forms): the splitter may cut between two such characters. */
int ct_is_cjk(unsigned c);

#endif
