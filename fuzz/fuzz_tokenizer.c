/* libFuzzer target for the BPE tokenizer: encodes arbitrary bytes (valid or invalid UTF-8) with
 * the Qwen3 tokenizer from assets/, checks the buffer-limit path and the byte-level round trip.
 * Traps only on a real bug: a status other than OK/INVALID_ARG/LIMIT, disagreeing counts, or an
 * ASCII input (NFC is the identity there) that does not decode back to itself. */
#include "text/bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_asset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Entry point: must never crash, whatever the bytes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_bpe *tok = tokenizer();
    if (!tok) __builtin_trap(); /* the assets are part of the tree */
    char err[256];
    size_t n = 0;
    ct_status st = ct_bpe_encode(tok, (const char *)data, size, NULL, 0, &n, err, sizeof err);
    if (st == CT_ERR_INVALID_ARG) return 0; /* invalid UTF-8 */
    if (st != CT_OK && st != CT_ERR_LIMIT) __builtin_trap();
    if (size > 0 && n == 0) __builtin_trap();
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return 0;
    size_t n2 = 0;
    st = ct_bpe_encode(tok, (const char *)data, size, ids, n, &n2, err, sizeof err);
    if (st != CT_OK || n2 != n) __builtin_trap();
    if (n > 1) { /* a short buffer keeps the prefix and reports the full count */
        int32_t head[1];
        size_t n3 = 0;
        if (ct_bpe_encode(tok, (const char *)data, size, head, 1, &n3, err, sizeof err) != CT_ERR_LIMIT ||
            n3 != n || head[0] != ids[0])
            __builtin_trap();
    }
    size_t cap = size * 4 + 64, len = 0;
    char *out = malloc(cap);
    if (out) {
        if (ct_bpe_decode(tok, ids, n, out, cap, &len) != CT_OK) __builtin_trap();
        int ascii = 1;
        for (size_t i = 0; i < size && ascii; i++) ascii = data[i] < 0x80;
        if (ascii && (len != size || memcmp(out, data, size) != 0)) __builtin_trap();
        free(out);
    }
    free(ids);
    return 0;
}
