/* libFuzzer target for incremental tokenization (ct_bpe_stable_prefix, what the stream engine
 * does with text that arrives in pieces): the first byte picks how many bytes arrive at a time,
 * the rest is the text. For valid UTF-8, taking the stable prefix of the untaken text after each
 * piece and the remainder at the end must give exactly the ids of the whole text; invalid UTF-8
 * must be refused. Traps on a mismatch or any other status. */
#include "text/bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_asset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_bpe *tok = tokenizer();
    if (!tok) __builtin_trap(); /* the assets are part of the tree */
    if (size < 1 || size > 4096) return 0;
    size_t step = (size_t)(data[0] % 8) + 1;
    const char *text = (const char *)data + 1;
    size_t len = size - 1, n = 0, b = 0;
    ct_status st = ct_bpe_encode(tok, text, len, NULL, 0, &n, NULL, 0);
    if (st == CT_ERR_INVALID_ARG) {
        if (ct_bpe_stable_prefix(tok, text, len, &b, NULL, 0) != CT_ERR_INVALID_ARG) __builtin_trap();
        return 0;
    }
    if (st != CT_OK && st != CT_ERR_LIMIT) __builtin_trap();
    int32_t *want = malloc((n + 1) * sizeof *want), *got = malloc((n + 1) * sizeof *got);
    if (!want || !got) {
        free(want);
        free(got);
        return 0;
    }
    if (ct_bpe_encode(tok, text, len, want, n, &n, NULL, 0) != CT_OK) __builtin_trap();
    size_t at = 0, have = 0, L = 0;
    while (L < len) {
        L += step;
        if (L > len) L = len;
        while (L < len && ((unsigned char)text[L] & 0xC0) == 0x80) L++; /* the engine reassembles sequences */
        if (ct_bpe_stable_prefix(tok, text + at, L - at, &b, NULL, 0) != CT_OK || b > L - at) __builtin_trap();
        size_t k = 0;
        if (b && (ct_bpe_encode(tok, text + at, b, got + have, n - have, &k, NULL, 0) != CT_OK)) __builtin_trap();
        have += k;
        at += b;
    }
    size_t k = 0;
    if (at < len && ct_bpe_encode(tok, text + at, len - at, got + have, n - have, &k, NULL, 0) != CT_OK)
        __builtin_trap();
    have += k;
    if (have != n || memcmp(got, want, n * sizeof *got) != 0) __builtin_trap();
    free(want);
    free(got);
    return 0;
}
