/* Safetensors reader: mmap + strict header validation (the header is untrusted input). */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include "io/safetensors.h"

#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CT_ST_MAX_HEADER (256u << 20) /* 256 MiB: far above any real header */

struct ct_st_file {
    void *map;          /* whole-file mapping (NULL for buffers) */
    size_t map_len;
    const uint8_t *base; /* start of the file bytes */
    size_t len;
    ct_st_tensor *t;    /* [n] sorted by name */
    size_t n;
    char *names;        /* all names, NUL-separated */
    json_t *meta;       /* the __metadata__ object (owned reference), or NULL */
};

char *ct_st_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
    size_t off = 0;
    if (!cap) return buf;
    buf[0] = 0;
    off += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (off < cap) snprintf(buf + off, cap - off, "]");
    return buf;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const ct_st_tensor *)a)->name, ((const ct_st_tensor *)b)->name);
}

typedef struct {
    uint64_t lo, hi;
    size_t idx;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return 0;
}

static int json_u64(json_t *v, uint64_t *out) {
    if (!json_is_integer(v)) return 0;
    json_int_t x = json_integer_value(v);
    if (x < 0) return 0;
    *out = (uint64_t)x;
    return 1;
}

static ct_status parse_header(ct_st_file *f, char *err, size_t errcap) {
    if (f->len < 8)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: file is %zu bytes, shorter than "
                       "the 8-byte header length", f->len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | f->base[i];
    if (hlen > f->len - 8)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: header length %llu exceeds the "
                       "file (%zu bytes): truncated or corrupt", (unsigned long long)hlen, f->len);
    if (hlen > CT_ST_MAX_HEADER || hlen < 2)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: implausible header length %llu",
                       (unsigned long long)hlen);
    const char *hdr = (const char *)f->base + 8;
    size_t data_len = f->len - 8 - (size_t)hlen;
    const uint8_t *data = f->base + 8 + hlen;

    json_error_t jerr;
    json_t *root = json_loadb(hdr, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: header is not valid JSON "
                       "(line %d col %d: %s)", jerr.line, jerr.column, jerr.text);
    ct_status st = CT_OK;
    span *spans = NULL;
    if (!json_is_object(root)) {
        st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: header is not a JSON object");
        goto done;
    }
    size_t n = 0, name_bytes = 0;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) continue;
        n++;
        name_bytes += strlen(key) + 1;
    }
    f->t = calloc(n ? n : 1, sizeof *f->t);
    f->names = malloc(name_bytes ? name_bytes : 1);
    spans = calloc(n ? n : 1, sizeof *spans);
    if (!f->t || !f->names || !spans) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "safetensors: out of memory for %zu tensors", n);
        goto done;
    }
    size_t i = 0, noff = 0;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(val)) {
                st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: __metadata__ is not an object");
                goto done;
            }
            f->meta = json_incref(val);
            continue;
        }
        ct_st_tensor *t = &f->t[i];
        size_t kl = strlen(key);
        memcpy(f->names + noff, key, kl + 1);
        t->name = f->names + noff;
        noff += kl + 1;
        json_t *jd = json_object_get(val, "dtype");
        json_t *js = json_object_get(val, "shape");
        json_t *jo = json_object_get(val, "data_offsets");
        if (!json_is_object(val) || !json_is_string(jd) || !json_is_array(js) ||
            !json_is_array(jo) || json_array_size(jo) != 2) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' lacks dtype, shape "
                         "or data_offsets", key);
            goto done;
        }
        if (!ct_dtype_parse(json_string_value(jd), &t->dtype)) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' has unknown dtype '%s'",
                         key, json_string_value(jd));
            goto done;
        }
        size_t nd = json_array_size(js);
        if (nd > CT_ST_MAX_DIMS) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' has %zu dims (max %d)",
                         key, nd, CT_ST_MAX_DIMS);
            goto done;
        }
        t->ndim = (int)nd;
        uint64_t elems = 1;
        int overflow = 0;
        for (size_t d = 0; d < nd; d++) {
            uint64_t dim;
            if (!json_u64(json_array_get(js, d), &dim) || dim > (1ull << 40)) {
                st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' has a bad shape "
                             "entry at dim %zu", key, d);
                goto done;
            }
            t->shape[d] = (int64_t)dim;
            if (dim && elems > UINT64_MAX / dim) overflow = 1;
            elems *= dim;
        }
        uint64_t esz = ct_dtype_size(t->dtype);
        if (overflow || (esz && elems > UINT64_MAX / esz)) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' shape overflows", key);
            goto done;
        }
        uint64_t lo, hi;
        if (!json_u64(json_array_get(jo, 0), &lo) || !json_u64(json_array_get(jo, 1), &hi) ||
            lo > hi) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' has bad data_offsets",
                         key);
            goto done;
        }
        if (hi > data_len) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' ends at byte %llu of "
                         "a %zu-byte data area (file truncated or header lies)", key,
                         (unsigned long long)hi, data_len);
            goto done;
        }
        if (hi - lo != elems * esz) {
            char sb[128];
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensor '%s' %s %s needs %llu bytes "
                         "but data_offsets span %llu", key, ct_dtype_name(t->dtype),
                         ct_st_shape_str(t->shape, t->ndim, sb, sizeof sb),
                         (unsigned long long)(elems * esz), (unsigned long long)(hi - lo));
            goto done;
        }
        t->nbytes = hi - lo;
        t->data = data + lo;
        spans[i].lo = lo;
        spans[i].hi = hi;
        spans[i].idx = i;
        i++;
    }
    f->n = n;
    qsort(spans, n, sizeof *spans, cmp_span);
    for (size_t k = 1; k < n; k++) {
        if (spans[k].lo < spans[k - 1].hi) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "safetensors: tensors '%s' and '%s' overlap",
                         f->t[spans[k - 1].idx].name, f->t[spans[k].idx].name);
            goto done;
        }
    }
    qsort(f->t, n, sizeof *f->t, cmp_name);
done:
    free(spans);
    json_decref(root);
    return st;
}

static ct_status finish_open(ct_st_file *f, ct_st_file **out, char *err, size_t errcap) {
    ct_status st = parse_header(f, err, errcap);
    if (st != CT_OK) {
        ct_st_close(f);
        return st;
    }
    *out = f;
    return CT_OK;
}

ct_status ct_st_open(const char *path, ct_st_file **out, char *err, size_t errcap) {
    if (!path || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "safetensors: NULL argument");
    *out = NULL;
    /* O_NONBLOCK: a FIFO in place of the file must not block the open; fstat refuses it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file (%s)", path,
                       ct_file_kind(sb.st_mode));
    }
    ct_st_file *f = calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    }
    f->len = (size_t)sb.st_size;
    if (f->len > 0) {
        f->map = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            f->map = NULL;
            close(fd);
            free(f);
            return ct_errf(err, errcap, CT_ERR_IO, "cannot mmap '%s': %s", path, strerror(errno));
        }
        f->map_len = f->len;
        f->base = f->map;
    }
    close(fd);
    char inner[512];
    ct_status st = finish_open(f, out, inner, sizeof inner);
    if (st != CT_OK) ct_errf(err, errcap, st, "%s: %s", path, inner);
    return st;
}

ct_status ct_st_open_buffer(const void *buf, size_t len, ct_st_file **out, char *err,
                            size_t errcap) {
    if ((!buf && len) || !out)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "safetensors: NULL argument");
    *out = NULL;
    ct_st_file *f = calloc(1, sizeof *f);
    if (!f) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    f->base = buf;
    f->len = len;
    return finish_open(f, out, err, errcap);
}

void ct_st_close(ct_st_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->map_len);
    free(f->t);
    free(f->names);
    json_decref(f->meta);
    free(f);
}

typedef struct {
    uintptr_t lo, hi;
} byte_range;

static int range_cmp(const void *a, const void *b) {
    const byte_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

size_t ct_st_advise_huge(ct_st_file *f, const char *const *names, int n) {
    if (!f || !f->map || n <= 0) return 0;
    byte_range *r = malloc(sizeof *r * (f->n ? f->n : 1));
    if (!r) return 0; /* a hint only */
    size_t nr = 0, done = 0;
    for (size_t i = 0; i < f->n; i++) {
        const ct_st_tensor *t = &f->t[i];
        int hit = 0;
        for (int k = 0; k < n && !hit; k++) hit = strstr(t->name, names[k]) != NULL;
        if (hit && t->nbytes) r[nr++] = (byte_range){(uintptr_t)t->data, (uintptr_t)t->data + t->nbytes};
    }
    qsort(r, nr, sizeof *r, range_cmp);
#ifdef MADV_HUGEPAGE
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), join = (uintptr_t)2 << 20;
    for (size_t i = 0; i < nr;) {
        uintptr_t lo = r[i].lo, hi = r[i].hi;
        for (i++; i < nr && r[i].lo < hi + join; i++) hi = r[i].hi > hi ? r[i].hi : hi;
        lo &= ~(pg - 1); /* madvise rounds the length up to the page */
        if (madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE) == 0) done += (size_t)(hi - lo);
    }
#endif
    free(r);
    return done;
}

const char *ct_st_meta(const ct_st_file *f, const char *key) {
    json_t *v = f && f->meta && key ? json_object_get(f->meta, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

size_t ct_st_count(const ct_st_file *f) { return f ? f->n : 0; }

const ct_st_tensor *ct_st_at(const ct_st_file *f, size_t i) {
    return (f && i < f->n) ? &f->t[i] : NULL;
}

const ct_st_tensor *ct_st_find(const ct_st_file *f, const char *name) {
    if (!f || !name) return NULL;
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->t[mid].name, name);
        if (c == 0) return &f->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}
