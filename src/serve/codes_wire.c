/* The codec-token wire format: encoder, strict incremental decoder, base64 (see codes_wire.h
   and docs/CODES_WIRE.md). */
#include "serve/codes_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR_FIXED 18  /* version, kind, n_groups, codebook_size - 1, sample_rate, spf, frame rate */
#define FRAME_FIXED 6 /* version, kind, index */

struct ct_codes_reader {
    ct_codes_cb cb;
    uint8_t rec[4 + CT_CODES_MAX_RECORD]; /* the record being assembled */
    size_t have;                          /* bytes of it so far */
    uint64_t offset;                      /* stream offset of its first byte */
    ct_codes_header h;
    int got_header, ended, end_stop;
    uint32_t next_index, end_frames, next_utt;
    ct_status failed;
    char msg[512];
    int32_t codes[CT_CODES_MAX_GROUPS];
};

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t ct_codes_frame_bytes(int n_groups) { return 4 + FRAME_FIXED + 2 * (size_t)n_groups; }

/* Starts a record of payload length len: prefix, version, kind. 0 when it does not fit. */
static size_t rec_begin(uint8_t *buf, size_t cap, size_t len, int kind) {
    if (len > CT_CODES_MAX_RECORD || 4 + len > cap) return 0;
    put32(buf, (uint32_t)len);
    buf[4] = CT_CODES_WIRE_VERSION;
    buf[5] = (uint8_t)kind;
    return 4 + len;
}

size_t ct_codes_put_header(uint8_t *buf, size_t cap, const ct_codes_header *h) {
    size_t lc = strlen(h->codec_id), lm = strlen(h->model_id);
    if (lc > CT_CODES_ID_MAX || lm > CT_CODES_ID_MAX || h->n_groups < 1 || h->n_groups > CT_CODES_MAX_GROUPS ||
        h->codebook_size < 1 || h->codebook_size > 65536 || h->sample_rate < 1 || h->samples_per_frame < 1 ||
        h->frame_rate_mhz < 1)
        return 0;
    size_t n = rec_begin(buf, cap, HDR_FIXED + 2 + lc + lm, CT_CODES_REC_HEADER);
    if (!n) return 0;
    uint8_t *p = buf + 6;
    put16(p, (uint32_t)h->n_groups);
    put16(p + 2, (uint32_t)(h->codebook_size - 1));
    put32(p + 4, (uint32_t)h->sample_rate);
    put32(p + 8, (uint32_t)h->samples_per_frame);
    put32(p + 12, (uint32_t)h->frame_rate_mhz);
    p += 16;
    *p++ = (uint8_t)lc;
    memcpy(p, h->codec_id, lc);
    p += lc;
    *p++ = (uint8_t)lm;
    memcpy(p, h->model_id, lm);
    return n;
}

size_t ct_codes_put_frame(uint8_t *buf, size_t cap, uint32_t index, const int32_t *codes, int n_groups) {
    if (n_groups < 1 || n_groups > CT_CODES_MAX_GROUPS) return 0;
    for (int g = 0; g < n_groups; g++)
        if (codes[g] < 0 || codes[g] > 65535) return 0;
    size_t n = rec_begin(buf, cap, FRAME_FIXED + 2 * (size_t)n_groups, CT_CODES_REC_FRAME);
    if (!n) return 0;
    put32(buf + 6, index);
    for (int g = 0; g < n_groups; g++) put16(buf + 10 + 2 * g, (uint32_t)codes[g]);
    return n;
}

size_t ct_codes_put_end(uint8_t *buf, size_t cap, uint32_t frames, int stop) {
    if (stop < 0 || stop > 255) return 0;
    size_t n = rec_begin(buf, cap, 7, CT_CODES_REC_END);
    if (!n) return 0;
    put32(buf + 6, frames);
    buf[10] = (uint8_t)stop;
    return n;
}

size_t ct_codes_put_utterance(uint8_t *buf, size_t cap, uint32_t index) {
    size_t n = rec_begin(buf, cap, 6, CT_CODES_REC_UTTERANCE);
    if (!n) return 0;
    put32(buf + 6, index);
    return n;
}

size_t ct_codes_put_error(uint8_t *buf, size_t cap, const char *msg) {
    size_t lm = strlen(msg);
    if (lm > CT_CODES_MAX_RECORD - 2) lm = CT_CODES_MAX_RECORD - 2;
    if (cap >= 6 && lm > cap - 6) lm = cap - 6;
    size_t n = rec_begin(buf, cap, 2 + lm, CT_CODES_REC_ERROR);
    if (!n) return 0;
    memcpy(buf + 6, msg, lm);
    return n;
}

ct_codes_reader *ct_codes_reader_new(const ct_codes_cb *cb) {
    ct_codes_reader *r = calloc(1, sizeof *r);
    if (r && cb) r->cb = *cb;
    return r;
}

void ct_codes_reader_free(ct_codes_reader *r) { free(r); }

/* Records the first failure; every later call repeats it. */
static ct_status fail(ct_codes_reader *r, ct_status st, char *err, size_t errcap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static ct_status fail(ct_codes_reader *r, ct_status st, char *err, size_t errcap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->failed = st;
    return ct_errf(err, errcap, st, "%s", r->msg);
}

static int printable(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] == 0x7f) return 0;
    return 1;
}

/* One complete record in r->rec (length prefix + payload). */
static ct_status record(ct_codes_reader *r, char *err, size_t errcap) {
    const uint8_t *p = r->rec + 4;
    size_t len = r->have - 4;
    unsigned long long at = (unsigned long long)r->offset;
    if (len < 2)
        return fail(r, CT_ERR_FORMAT, err, errcap,
                    "codes stream: record at byte %llu has %zu payload bytes (at least 2: version, kind)", at, len);
    if (p[0] != CT_CODES_WIRE_VERSION)
        return fail(r, CT_ERR_FORMAT, err, errcap,
                    "codes stream: record at byte %llu has wire version %u; this reader knows version %d", at, p[0],
                    CT_CODES_WIRE_VERSION);
    int kind = p[1];
    if (r->ended)
        return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: record at byte %llu comes after the end record", at);
    if (kind == CT_CODES_REC_ERROR) {
        size_t lm = len - 2;
        if (lm > 400) lm = 400;
        return fail(r, CT_ERR_IO, err, errcap, "codes stream failed at the server: %.*s", (int)lm,
                    printable(p + 2, lm) ? (const char *)p + 2 : "(unprintable message)");
    }
    if (kind != CT_CODES_REC_HEADER && !r->got_header)
        return fail(r, CT_ERR_FORMAT, err, errcap,
                    "codes stream: record at byte %llu (kind %d) comes before the header record", at, kind);
    char cbmsg[256] = "";
    if (kind == CT_CODES_REC_HEADER) {
        if (r->got_header)
            return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: a second header record at byte %llu", at);
        if (len < HDR_FIXED + 2)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: header record at byte %llu is %zu bytes, too short", at, len);
        ct_codes_header *h = &r->h;
        h->n_groups = (int)get16(p + 2);
        h->codebook_size = (int)get16(p + 4) + 1;
        h->sample_rate = (int)get32(p + 6);
        h->samples_per_frame = (int)get32(p + 10);
        h->frame_rate_mhz = (int)get32(p + 14);
        size_t lc = p[18];
        if (len < HDR_FIXED + 2 + lc)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: header record at byte %llu: codec_id runs past the record", at);
        size_t lm = p[19 + lc];
        if (len != HDR_FIXED + 2 + lc + lm)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: header record at byte %llu is %zu bytes; its ids say %zu", at, len,
                        (size_t)HDR_FIXED + 2 + lc + lm);
        memcpy(h->codec_id, p + 19, lc);
        h->codec_id[lc] = 0;
        memcpy(h->model_id, p + 20 + lc, lm);
        h->model_id[lm] = 0;
        if (!printable((const uint8_t *)h->codec_id, lc) || !printable((const uint8_t *)h->model_id, lm))
            return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: header ids hold control characters");
        if (h->n_groups < 1 || h->n_groups > CT_CODES_MAX_GROUPS)
            return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: header n_groups %d outside [1, %d]", h->n_groups,
                        CT_CODES_MAX_GROUPS);
        if (h->sample_rate < 1 || h->sample_rate > 1000000 || h->samples_per_frame < 1 ||
            h->samples_per_frame > 1000000)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: header sample_rate %d / samples_per_frame %d out of range", h->sample_rate,
                        h->samples_per_frame);
        long long want = ((long long)h->sample_rate * 1000 + h->samples_per_frame / 2) / h->samples_per_frame;
        if (h->frame_rate_mhz != want)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: header frame rate %d mHz does not match %d Hz / %d samples per frame (%lld mHz)",
                        h->frame_rate_mhz, h->sample_rate, h->samples_per_frame, want);
        r->got_header = 1;
        if (r->cb.on_header && r->cb.on_header(r->cb.ud, h, cbmsg, sizeof cbmsg))
            return fail(r, CT_ERR_ABORTED, err, errcap, "%s", cbmsg[0] ? cbmsg : "codes stream: stopped at the header");
        return CT_OK;
    }
    if (kind == CT_CODES_REC_FRAME) {
        const int G = r->h.n_groups;
        if (len != FRAME_FIXED + 2 * (size_t)G)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: frame record at byte %llu is %zu bytes; %d codes need %zu", at, len, G,
                        (size_t)FRAME_FIXED + 2 * (size_t)G);
        uint32_t idx = get32(p + 2);
        if (idx != r->next_index)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: frame %u at byte %llu out of order (expected frame %u)", idx, at, r->next_index);
        for (int g = 0; g < G; g++) {
            uint32_t v = get16(p + 6 + 2 * g);
            if ((int)v >= r->h.codebook_size)
                return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: frame %u group %d: code %u outside [0, %d)",
                            idx, g, v, r->h.codebook_size);
            r->codes[g] = (int32_t)v;
        }
        r->next_index++;
        if (r->cb.on_frame && r->cb.on_frame(r->cb.ud, idx, r->codes, G, cbmsg, sizeof cbmsg))
            return fail(r, CT_ERR_ABORTED, err, errcap, "%s", cbmsg[0] ? cbmsg : "codes stream: stopped at a frame");
        return CT_OK;
    }
    if (kind == CT_CODES_REC_UTTERANCE) {
        if (len != 6)
            return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: utterance record at byte %llu is %zu bytes (6)",
                        at, len);
        uint32_t u = get32(p + 2);
        if (u != r->next_utt + 1)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: utterance %u at byte %llu out of order (expected utterance %u)", u, at,
                        r->next_utt + 1);
        r->next_utt = u;
        if (r->cb.on_utterance && r->cb.on_utterance(r->cb.ud, u, cbmsg, sizeof cbmsg))
            return fail(r, CT_ERR_ABORTED, err, errcap, "%s",
                        cbmsg[0] ? cbmsg : "codes stream: stopped at an utterance");
        return CT_OK;
    }
    if (kind == CT_CODES_REC_END) {
        if (len != 7)
            return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: end record at byte %llu is %zu bytes (7)", at,
                        len);
        r->end_frames = get32(p + 2);
        r->end_stop = p[6];
        if (r->end_frames != r->next_index)
            return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: the end record counts %u frames; %u arrived",
                        r->end_frames, r->next_index);
        r->ended = 1;
        return CT_OK;
    }
    return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream: record at byte %llu has unknown kind %d", at, kind);
}

ct_status ct_codes_feed(ct_codes_reader *r, const uint8_t *p, size_t n, char *err, size_t errcap) {
    if (!r) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "codes stream: NULL reader");
    if (r->failed) return ct_errf(err, errcap, r->failed, "%s", r->msg);
    while (n > 0) {
        size_t need = r->have < 4 ? 4 : 4 + (size_t)get32(r->rec);
        size_t take = need - r->have < n ? need - r->have : n;
        memcpy(r->rec + r->have, p, take);
        r->have += take, p += take, n -= take;
        if (r->have == 4 && get32(r->rec) > CT_CODES_MAX_RECORD)
            return fail(r, CT_ERR_FORMAT, err, errcap,
                        "codes stream: record at byte %llu declares %u bytes (at most %d)",
                        (unsigned long long)r->offset, get32(r->rec), CT_CODES_MAX_RECORD);
        if (r->have >= 4 && r->have == 4 + (size_t)get32(r->rec)) {
            ct_status st = record(r, err, errcap);
            if (st != CT_OK) return st;
            r->offset += r->have;
            r->have = 0;
        }
    }
    return CT_OK;
}

ct_status ct_codes_finish(ct_codes_reader *r, char *err, size_t errcap) {
    if (!r) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "codes stream: NULL reader");
    if (r->failed) return ct_errf(err, errcap, r->failed, "%s", r->msg);
    if (r->have)
        return fail(r, CT_ERR_FORMAT, err, errcap,
                    "codes stream truncated: it ends inside the record at byte %llu (%zu of %zu bytes)",
                    (unsigned long long)r->offset, r->have, r->have < 4 ? (size_t)4 : 4 + (size_t)get32(r->rec));
    if (!r->got_header) return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream truncated: no header record");
    if (!r->ended)
        return fail(r, CT_ERR_FORMAT, err, errcap, "codes stream truncated: no end record after %u frames",
                    r->next_index);
    return CT_OK;
}

int ct_codes_reader_frames(const ct_codes_reader *r) { return r ? (int)r->end_frames : 0; }
int ct_codes_reader_stop(const ct_codes_reader *r) { return r ? r->end_stop : 0; }

size_t ct_b64_encode(char *dst, const uint8_t *src, size_t n) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)src[i] << 16) | ((uint32_t)src[i + 1] << 8) | src[i + 2];
        dst[o++] = T[v >> 18], dst[o++] = T[(v >> 12) & 63], dst[o++] = T[(v >> 6) & 63], dst[o++] = T[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)src[i] << 16;
        if (i + 1 < n) v |= (uint32_t)src[i + 1] << 8;
        dst[o++] = T[v >> 18], dst[o++] = T[(v >> 12) & 63];
        dst[o++] = i + 1 < n ? T[(v >> 6) & 63] : '=';
        dst[o++] = '=';
    }
    return o;
}

static int b64v(char c) {
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

long ct_b64_decode(uint8_t *dst, const char *src, size_t n) {
    if (n % 4) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int pad = (src[i + 3] == '=') + (src[i + 2] == '=' && src[i + 3] == '=');
        if (pad && i + 4 != n) return -1;
        int a = b64v(src[i]), b = b64v(src[i + 1]), c = pad >= 2 ? 0 : b64v(src[i + 2]), d = pad ? 0 : b64v(src[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0) return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        dst[o++] = (uint8_t)(v >> 16);
        if (pad < 2) dst[o++] = (uint8_t)(v >> 8);
        if (pad < 1) dst[o++] = (uint8_t)v;
    }
    return (long)o;
}
