/* Protocol-buffers wire-format writer and reader (see pb.h). */
#include "export/pb.h"

#include <stdlib.h>
#include <string.h>

void ct_pb_free(ct_pb *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int grow(ct_pb *b, size_t n) {
    if (b->oom) return 0;
    if (b->len + n <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return 0;
        }
        cap *= 2;
    }
    uint8_t *d = realloc(b->data, cap);
    if (!d) {
        b->oom = 1;
        return 0;
    }
    b->data = d;
    b->cap = cap;
    return 1;
}

void ct_pb_raw(ct_pb *b, const void *p, size_t n) {
    if (!n || !grow(b, n)) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

size_t ct_pb_varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void ct_pb_varint(ct_pb *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    ct_pb_raw(b, tmp, n);
}

void ct_pb_tag(ct_pb *b, int field, int wire) { ct_pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }

void ct_pb_int(ct_pb *b, int field, int64_t v) {
    ct_pb_tag(b, field, CT_PB_VARINT);
    ct_pb_varint(b, (uint64_t)v);
}

void ct_pb_float(ct_pb *b, int field, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    uint8_t t[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    ct_pb_tag(b, field, CT_PB_I32);
    ct_pb_raw(b, t, 4);
}

void ct_pb_bytes(ct_pb *b, int field, const void *p, size_t n) {
    ct_pb_tag(b, field, CT_PB_LEN);
    ct_pb_varint(b, n);
    ct_pb_raw(b, p, n);
}

void ct_pb_str(ct_pb *b, int field, const char *s) { ct_pb_bytes(b, field, s, strlen(s)); }

void ct_pb_msg(ct_pb *b, int field, const ct_pb *child) {
    if (child->oom) b->oom = 1;
    ct_pb_bytes(b, field, child->data, child->len);
}

void ct_pb_packed_ints(ct_pb *b, int field, const int64_t *v, size_t n) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += ct_pb_varint_len((uint64_t)v[i]);
    ct_pb_tag(b, field, CT_PB_LEN);
    ct_pb_varint(b, len);
    for (size_t i = 0; i < n; i++) ct_pb_varint(b, (uint64_t)v[i]);
}

void ct_pb_rd_init(ct_pb_rd *r, const void *p, size_t n) {
    r->p = p;
    r->end = (const uint8_t *)p + n;
    r->bad = 0;
}

int ct_pb_read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
    const uint8_t *p = *pp;
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return 0;
        uint8_t c = *p++;
        if (i == 9 && c > 1) return 0; /* more than 64 bits */
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = x;
            *pp = p;
            return 1;
        }
    }
    return 0;
}

int ct_pb_next(ct_pb_rd *r, ct_pb_field *f) {
    if (r->bad || r->p >= r->end) return 0;
    memset(f, 0, sizeof *f);
    f->start = r->p;
    uint64_t key;
    const uint8_t *p = r->p;
    if (!ct_pb_read_varint(&p, r->end, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) {
        r->bad = 1;
        return 0;
    }
    f->field = (int)(key >> 3);
    f->wire = (int)(key & 7);
    switch (f->wire) {
    case CT_PB_VARINT:
        if (!ct_pb_read_varint(&p, r->end, &f->v)) r->bad = 1;
        break;
    case CT_PB_I64:
        if ((size_t)(r->end - p) < 8) r->bad = 1;
        else {
            for (int i = 0; i < 8; i++) f->v |= (uint64_t)p[i] << (8 * i);
            p += 8;
        }
        break;
    case CT_PB_I32:
        if ((size_t)(r->end - p) < 4) r->bad = 1;
        else {
            for (int i = 0; i < 4; i++) f->v |= (uint64_t)p[i] << (8 * i);
            p += 4;
        }
        break;
    case CT_PB_LEN: {
        uint64_t n;
        if (!ct_pb_read_varint(&p, r->end, &n) || n > (uint64_t)(r->end - p)) {
            r->bad = 1;
            break;
        }
        f->data = p;
        f->len = (size_t)n;
        p += n;
        break;
    }
    default:
        r->bad = 1;
    }
    if (r->bad) return 0;
    r->p = p;
    f->stop = p;
    return 1;
}
