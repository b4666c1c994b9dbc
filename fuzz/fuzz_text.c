/* libFuzzer target for the text front end (untrusted request text): the normaliser (English,
 * Chinese, auto, another language) and the sentence and utterance splitter on arbitrary bytes
 * and on the normalised text. The first byte picks the length limit and the language. The
 * normaliser traps when it fails, changes text of another language, or turns valid UTF-8 into
 * invalid UTF-8; the splitter Traps on a broken
 * invariant: spans out of order, overlapping, empty, outside the input, not trimmed, longer than
 * the limit where a shorter cut existed (a span over the limit must be one grapheme cluster run
 * without spaces), starting inside a UTF-8 sequence, or utterances that do not cover the
 * sentences. */
#include "text/normalize.h"
#include "text/sentences.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* 1 when t[0..len) is valid UTF-8. */
static int valid_utf8(const uint8_t *t, size_t len) {
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(t + i, (utf8proc_ssize_t)(len - i), &c);
        if (n < 1) return 0;
        i += (size_t)n;
    }
    return 1;
}

static void check_spans(const uint8_t *t, size_t len, const ct_span *s, size_t n, size_t max) {
    int valid = valid_utf8(t, len);
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].len == 0 || s[i].off < end || s[i].off + s[i].len > len) __builtin_trap();
        if (space(t[s[i].off]) || space(t[s[i].off + s[i].len - 1])) __builtin_trap();
        if (valid && ((t[s[i].off] & 0xC0) == 0x80 || (s[i].off + s[i].len < len && (t[s[i].off + s[i].len] & 0xC0) == 0x80)))
            __builtin_trap(); /* cut inside a UTF-8 sequence */
        if (s[i].len > max)
            for (size_t k = s[i].off; k < s[i].off + s[i].len; k++)
                if (space(t[k])) __builtin_trap(); /* a space was there to cut at */
        if (i == 0 && s[i].para) __builtin_trap();
        end = s[i].off + s[i].len;
    }
}

static void split(const char *t, size_t len, size_t max);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t max = 8 + data[0] % 64 * 5;
    split((const char *)data + 1, size - 1, max);
    static const char *const LANG[] = {"english", "chinese", "auto", "german"};
    const char *lang = LANG[data[0] >> 6];
    char *n = NULL, err[128];
    if (ct_normalize((const char *)data + 1, size - 1, lang, &n, err, sizeof err) != CT_OK || !n) __builtin_trap();
    size_t nl = strlen(n);
    if (data[0] >> 6 == 3 && (nl != size - 1 || memcmp(n, data + 1, nl) != 0) && !memchr(data + 1, 0, size - 1))
        __builtin_trap(); /* another language: unchanged */
    if (valid_utf8(data + 1, size - 1) && !memchr(data + 1, 0, size - 1) && !valid_utf8((const uint8_t *)n, nl))
        __builtin_trap();
    split(n, nl, max);
    free(n);
    return 0;
}

/* Splits t and checks the spans. */
static void split(const char *t, size_t len, size_t max) {
    size_t ns = ct_split_sentences(t, len, max, NULL, 0);
    ct_span *s = malloc(sizeof *s * (ns ? ns : 1)), *u = malloc(sizeof *u * (ns ? ns : 1));
    if (!s || !u) {
        free(s);
        free(u);
        return;
    }
    if (ct_split_sentences(t, len, max, s, ns) != ns) __builtin_trap();
    check_spans((const uint8_t *)t, len, s, ns, max);
    size_t nu = ct_split_utterances(t, len, max, u, ns);
    if (nu > ns || (ns && !nu)) __builtin_trap();
    check_spans((const uint8_t *)t, len, u, nu, max);
    if (nu && (u[0].off != s[0].off || u[nu - 1].off + u[nu - 1].len != s[ns - 1].off + s[ns - 1].len))
        __builtin_trap();
    free(s);
    free(u);
}
