/* Fuzz target: arbitrary bytes as a codes stream (docs/CODES_WIRE.md) fed to the incremental
   decoder whole and split at a point taken from the input. It must never crash; both feeds must
   agree; every frame and utterance it hands out must be in order with every code in range; and the same
   bytes as base64 must decode to the same result. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/codes_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    int cb_size, groups;
    uint32_t next, utt;
    unsigned long sum;
} fz;

static int on_header(void *ud, const ct_codes_header *h, char *msg, size_t cap) {
    fz *f = ud;
    (void)msg, (void)cap;
    if (h->n_groups < 1 || h->n_groups > CT_CODES_MAX_GROUPS || h->codebook_size < 1 || h->codebook_size > 65536 ||
        strlen(h->codec_id) > CT_CODES_ID_MAX || strlen(h->model_id) > CT_CODES_ID_MAX)
        __builtin_trap();
    f->cb_size = h->codebook_size;
    f->groups = h->n_groups;
    return 0;
}

static int on_frame(void *ud, uint32_t index, const int32_t *codes, int n, char *msg, size_t cap) {
    fz *f = ud;
    (void)msg, (void)cap;
    if (index != f->next++ || n != f->groups) __builtin_trap();
    for (int g = 0; g < n; g++) {
        if (codes[g] < 0 || codes[g] >= f->cb_size) __builtin_trap();
        f->sum += (unsigned long)codes[g];
    }
    return 0;
}

static int on_utterance(void *ud, uint32_t index, char *msg, size_t cap) {
    fz *f = ud;
    (void)msg, (void)cap;
    if (index != ++f->utt || !f->groups) __builtin_trap();
    f->sum += 7919u * index;
    return 0;
}

/* Decodes data[size] fed in two pieces split at `cut`; returns the status, fills *f. */
static ct_status run(const uint8_t *data, size_t size, size_t cut, fz *f, char *err, size_t cap) {
    memset(f, 0, sizeof *f);
    ct_codes_cb cb = {f, on_header, on_frame, on_utterance};
    ct_codes_reader *r = ct_codes_reader_new(&cb);
    if (!r) return CT_ERR_NOMEM;
    ct_status st = ct_codes_feed(r, data, cut, err, cap);
    if (st == CT_OK) st = ct_codes_feed(r, data + cut, size - cut, err, cap);
    if (st == CT_OK) st = ct_codes_finish(r, err, cap);
    if (st == CT_OK && ct_codes_reader_frames(r) != (int)f->next) __builtin_trap();
    if (st != CT_OK && (!err[0] || !memchr(err, 0, cap))) __builtin_trap();
    ct_codes_reader_free(r);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char e1[512] = "", e2[512] = "";
    fz a, b;
    ct_status s1 = run(data, size, size, &a, e1, sizeof e1);
    size_t cut = size ? data[0] % (size + 1) : 0;
    ct_status s2 = run(data, size, cut, &b, e2, sizeof e2);
    if (s1 == CT_ERR_NOMEM || s2 == CT_ERR_NOMEM) return 0;
    if (s1 != s2 || a.next != b.next || a.sum != b.sum || strcmp(e1, e2) != 0) __builtin_trap();
    /* base64 round trip of the same bytes */
    char *enc = malloc(4 * (size / 3 + 1) + 1);
    uint8_t *dec = malloc(size + 3);
    if (enc && dec) {
        size_t k = ct_b64_encode(enc, data, size);
        if (ct_b64_decode(dec, enc, k) != (long)size || memcmp(dec, data, size) != 0) __builtin_trap();
        (void)ct_b64_decode(dec, (const char *)data, size > 4 ? size - size % 4 : 0); /* arbitrary text */
    }
    free(enc);
    free(dec);
    return 0;
}
