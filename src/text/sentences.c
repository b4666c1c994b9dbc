/* Sentence splitting for long inputs (utterance boundaries for synthesis). */
#include "text/sentences.h"

#include <string.h>

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Length of a sentence terminator at p (0 if none): . ! ? ; and CJK 。！？；… */
static size_t terminator(const char *p, size_t left) {
    unsigned char c = (unsigned char)p[0];
    if (c == '.' || c == '!' || c == '?' || c == ';') return 1;
    static const char *cjk[] = {"\xe3\x80\x82", "\xef\xbc\x81", "\xef\xbc\x9f", "\xef\xbc\x9b",
                                "\xe2\x80\xa6", NULL};
    for (int i = 0; cjk[i]; i++)
        if (left >= 3 && memcmp(p, cjk[i], 3) == 0) return 3;
    return 0;
}

static size_t soft_break(const char *p, size_t left) {
    unsigned char c = (unsigned char)p[0];
    if (c == ',' || c == ':') return 1;
    if (left >= 3 && (memcmp(p, "\xef\xbc\x8c", 3) == 0 || memcmp(p, "\xe3\x80\x81", 3) == 0))
        return 3;
    return 0;
}

static size_t emit(const char *t, size_t a, size_t b, ct_span *s, size_t cap, size_t n) {
    while (a < b && is_space((unsigned char)t[a])) a++;
    while (b > a && is_space((unsigned char)t[b - 1])) b--;
    if (a == b) return n;
    if (n < cap) {
        s[n].off = a;
        s[n].len = b - a;
    }
    return n + 1;
}

/* Splits [a,b) that is too long at the last soft break or space before max_bytes. */
static size_t emit_long(const char *t, size_t a, size_t b, size_t max, ct_span *s, size_t cap,
                        size_t n) {
    while (b - a > max) {
        size_t cut = 0;
        for (size_t i = a; i < a + max; i++) {
            size_t k = soft_break(t + i, b - i);
            if (k) cut = i + k;
            else if (is_space((unsigned char)t[i]) && !cut) cut = 0;
        }
        if (!cut)
            for (size_t i = a + max; i > a; i--)
                if (is_space((unsigned char)t[i - 1])) {
                    cut = i;
                    break;
                }
        if (!cut) { /* no break at all: cut at a UTF-8 boundary */
            cut = a + max;
            while (cut > a && ((unsigned char)t[cut] & 0xC0) == 0x80) cut--;
            if (cut == a) cut = a + max;
        }
        n = emit(t, a, cut, s, cap, n);
        a = cut;
    }
    return emit(t, a, b, s, cap, n);
}

size_t ct_split_sentences(const char *t, size_t len, size_t max_bytes, ct_span *spans, size_t cap) {
    size_t n = 0, start = 0, i = 0;
    if (max_bytes < 8) max_bytes = 8;
    while (i < len) {
        size_t k = terminator(t + i, len - i);
        int end = 0;
        if (k) {
            size_t j = i + k;
            while (j < len && (t[j] == '"' || t[j] == '\'' || t[j] == ')' || terminator(t + j, len - j)))
                j += terminator(t + j, len - j) ? terminator(t + j, len - j) : 1;
            /* Latin terminators end a sentence only before whitespace/end (not "3.14", "e.g.x") */
            if (k == 3 || j >= len || is_space((unsigned char)t[j])) {
                i = j;
                end = 1;
            } else {
                i = j;
            }
        } else if (t[i] == '\n' && i + 1 < len && t[i + 1] == '\n') {
            i += 2;
            end = 1;
        } else {
            i++;
        }
        if (end) {
            n = emit_long(t, start, i, max_bytes, spans, cap, n);
            start = i;
        }
    }
    return emit_long(t, start, len, max_bytes, spans, cap, n);
}

size_t ct_split_utterances(const char *text, size_t len, size_t max_bytes, ct_span *spans, size_t cap) {
    size_t ns = ct_split_sentences(text, len, max_bytes, spans, cap);
    if (ns > cap) return ns; /* caller sizes spans with a first call (spans NULL, cap 0) */
    size_t nu = 0;
    for (size_t i = 0; i < ns; i++) {
        if (nu && spans[i].off + spans[i].len - spans[nu - 1].off <= max_bytes)
            spans[nu - 1].len = spans[i].off + spans[i].len - spans[nu - 1].off;
        else
            spans[nu++] = spans[i];
    }
    return nu;
}
