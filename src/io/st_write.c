/* Streaming safetensors writer (see st_write.h): a name-sorted JSON header followed by the
 * tensor bytes in header order, written through a buffered stream to "<path>.partial". */
#include "io/st_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;                      /* owned, NUL-terminated */
    ct_stw_dtype dtype;
    int ndim;
    int64_t shape[CT_STW_MAX_DIMS];  /* [ndim] */
    uint64_t nbytes;                 /* elements x dtype size */
    uint64_t offset;                 /* data offset, assigned by begin */
} stw_tensor;

struct ct_stw {
    stw_tensor *t;     /* [n] in declaration order */
    size_t n, cap;
    size_t *order;     /* [n] declaration indices sorted by name; set by begin */
    size_t cur;        /* position in order[] of the tensor being written */
    uint64_t cur_done; /* bytes already written for order[cur] */
    uint64_t data_len; /* sum of nbytes */
    uint64_t header_len;
    int align64;       /* ct_stw_align64 */
    FILE *fp;
    char *path;        /* final path */
    char *tmp_path;    /* path + ".partial" */
    int begun, finished, failed;
    char **meta;       /* [2 * n_meta] key, value pairs for __metadata__ (owned) */
    size_t n_meta;
};

size_t ct_stw_dtype_size(ct_stw_dtype dt) {
    switch (dt) {
    case CT_STW_BF16:
    case CT_STW_F16: return 2;
    case CT_STW_F32:
    case CT_STW_I32: return 4;
    case CT_STW_I8:
    case CT_STW_U8: return 1;
    }
    return 0;
}

const char *ct_stw_dtype_name(ct_stw_dtype dt) {
    switch (dt) {
    case CT_STW_BF16: return "BF16";
    case CT_STW_F16: return "F16";
    case CT_STW_F32: return "F32";
    case CT_STW_I32: return "I32";
    case CT_STW_I8: return "I8";
    case CT_STW_U8: return "U8";
    }
    return "?";
}

ct_status ct_stw_create(ct_stw **out, char *err, size_t errcap) {
    if (!out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: out is NULL");
    *out = calloc(1, sizeof(ct_stw));
    if (!*out) return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
    return CT_OK;
}

ct_status ct_stw_declare(ct_stw *w, const char *name, ct_stw_dtype dt, int ndim,
                         const int64_t *shape, char *err, size_t errcap) {
    if (!w || !name) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: NULL argument");
    if (w->begun) return ct_errf(err, errcap, CT_ERR_STATE, "st_write: declare '%s' after begin", name);
    if (!name[0]) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: empty tensor name");
    if (strcmp(name, "__metadata__") == 0)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: tensor name '__metadata__' is reserved");
    size_t esz = ct_stw_dtype_size(dt);
    if (!esz) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: tensor '%s': unknown dtype %d", name, (int)dt);
    if (ndim < 0 || ndim > CT_STW_MAX_DIMS || (ndim > 0 && !shape))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: tensor '%s': bad rank %d", name, ndim);
    uint64_t elems = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: tensor '%s': negative dim %d", name, i);
        uint64_t d = (uint64_t)shape[i];
        if (d && elems > (UINT64_MAX / 8) / d)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: tensor '%s': size overflows", name);
        elems *= d;
    }
    uint64_t nbytes = elems * esz;
    if (w->data_len > UINT64_MAX / 2 - nbytes)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: total size overflows at '%s'", name);
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        stw_tensor *nt = realloc(w->t, nc * sizeof(*nt));
        if (!nt) return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
        w->t = nt;
        w->cap = nc;
    }
    size_t len = strlen(name);
    char *copy = malloc(len + 1);
    if (!copy) return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
    memcpy(copy, name, len + 1);
    stw_tensor *t = &w->t[w->n++];
    memset(t, 0, sizeof(*t));
    t->name = copy;
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->nbytes = nbytes;
    w->data_len += nbytes;
    return CT_OK;
}

/* ---------------------------------------------------------------------------------------
 * Header construction */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_u64(sbuf *b, uint64_t v) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    sb_put(b, tmp, (size_t)n);
}

/* JSON string literal with the escapes RFC 8259 requires. */
static void sb_json_str(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\') {
            char e[2] = {'\\', (char)*q};
            sb_put(b, e, 2);
        } else if (*q < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", *q);
            sb_put(b, e, 6);
        } else {
            sb_put(b, (const char *)q, 1);
        }
    }
    sb_put(b, "\"", 1);
}

typedef struct {
    const char *name;
    size_t idx;
} name_idx;

static int cmp_name_idx(const void *a, const void *b) {
    return strcmp(((const name_idx *)a)->name, ((const name_idx *)b)->name);
}

static int write_all(FILE *fp, const void *p, size_t n) { return fwrite(p, 1, n, fp) == n; }

void ct_stw_align64(ct_stw *w) {
    if (w) w->align64 = 1;
}

ct_status ct_stw_begin(ct_stw *w, const char *path, char *err, size_t errcap) {
    if (!w || !path || !path[0]) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: NULL writer or path");
    if (w->begun) return ct_errf(err, errcap, CT_ERR_STATE, "st_write: begin called twice");
    free(w->order);
    free(w->path);
    free(w->tmp_path);
    w->order = malloc((w->n ? w->n : 1) * sizeof(size_t));
    size_t plen = strlen(path);
    w->path = malloc(plen + 1);
    w->tmp_path = malloc(plen + sizeof(".partial"));
    if (!w->order || !w->path || !w->tmp_path)
        return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
    memcpy(w->path, path, plen + 1);
    memcpy(w->tmp_path, path, plen);
    memcpy(w->tmp_path + plen, ".partial", sizeof(".partial"));
    name_idx *tmp = malloc((w->n ? w->n : 1) * sizeof(name_idx));
    if (!tmp) return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
    for (size_t i = 0; i < w->n; i++) {
        tmp[i].name = w->t[i].name;
        tmp[i].idx = i;
    }
    qsort(tmp, w->n, sizeof(name_idx), cmp_name_idx);
    for (size_t i = 0; i < w->n; i++) w->order[i] = tmp[i].idx;
    free(tmp);
    for (size_t i = 1; i < w->n; i++)
        if (strcmp(w->t[w->order[i - 1]].name, w->t[w->order[i]].name) == 0)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: duplicate tensor name '%s'",
                           w->t[w->order[i]].name);

    sbuf b = {0};
    const char *format = "pt";
    for (size_t i = 0; i < w->n_meta; i++)
        if (!strcmp(w->meta[2 * i], "format")) format = w->meta[2 * i + 1];
    sb_str(&b, "{\"__metadata__\":{\"format\":");
    sb_json_str(&b, format);
    for (size_t i = 0; i < w->n_meta; i++) {
        if (!strcmp(w->meta[2 * i], "format")) continue;
        sb_str(&b, ",");
        sb_json_str(&b, w->meta[2 * i]);
        sb_str(&b, ":");
        sb_json_str(&b, w->meta[2 * i + 1]);
    }
    sb_str(&b, "}");
    uint64_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        stw_tensor *t = &w->t[w->order[i]];
        t->offset = off;
        sb_str(&b, ",");
        sb_json_str(&b, t->name);
        sb_str(&b, ":{\"dtype\":\"");
        sb_str(&b, ct_stw_dtype_name(t->dtype));
        sb_str(&b, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d) sb_str(&b, ",");
            sb_u64(&b, (uint64_t)t->shape[d]);
        }
        sb_str(&b, "],\"data_offsets\":[");
        sb_u64(&b, off);
        sb_str(&b, ",");
        sb_u64(&b, off + t->nbytes);
        sb_str(&b, "]}");
        off += t->nbytes;
    }
    sb_str(&b, "}");
    while (!b.oom && (b.len % 8 || (w->align64 && (8 + b.len) % 64))) sb_str(&b, " ");
    if (b.oom) {
        free(b.p);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory building header");
    }
    w->header_len = b.len;

    w->fp = fopen(w->tmp_path, "wb");
    if (!w->fp) {
        int e = errno;
        free(b.p);
        return ct_errf(err, errcap, CT_ERR_IO, "st_write: cannot create '%s': %s", w->tmp_path, strerror(e));
    }
    w->begun = 1;
    setvbuf(w->fp, NULL, _IOFBF, 1 << 20);
    unsigned char lenle[8];
    for (int i = 0; i < 8; i++) lenle[i] = (unsigned char)(w->header_len >> (8 * i));
    int ok = write_all(w->fp, lenle, 8) && write_all(w->fp, b.p, b.len);
    free(b.p);
    if (!ok) {
        w->failed = 1;
        return ct_errf(err, errcap, CT_ERR_IO, "st_write: writing header of '%s' failed: %s", w->tmp_path,
                       strerror(errno));
    }
    w->cur = 0;
    w->cur_done = 0;
    while (w->cur < w->n && w->t[w->order[w->cur]].nbytes == 0) w->cur++;
    return CT_OK;
}

int ct_stw_next(const ct_stw *w, size_t *decl_index, uint64_t *remaining) {
    if (!w || !w->begun || w->finished || w->cur >= w->n) return 0;
    const stw_tensor *t = &w->t[w->order[w->cur]];
    if (decl_index) *decl_index = w->order[w->cur];
    if (remaining) *remaining = t->nbytes - w->cur_done;
    return 1;
}

ct_status ct_stw_write(ct_stw *w, const void *data, size_t nbytes, char *err, size_t errcap) {
    if (!w) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: NULL writer");
    if (!w->begun || w->finished || w->failed)
        return ct_errf(err, errcap, CT_ERR_STATE, "st_write: write without an open file");
    if (nbytes == 0) return CT_OK;
    if (!data) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: data is NULL");
    if (w->cur >= w->n)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: %zu bytes written after the last tensor", nbytes);
    stw_tensor *t = &w->t[w->order[w->cur]];
    if ((uint64_t)nbytes > t->nbytes - w->cur_done)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "st_write: tensor '%s' needs %llu more bytes, got a write of %zu", t->name,
                       (unsigned long long)(t->nbytes - w->cur_done), nbytes);
    if (!write_all(w->fp, data, nbytes)) {
        w->failed = 1;
        return ct_errf(err, errcap, CT_ERR_IO, "st_write: writing '%s' failed: %s", w->tmp_path, strerror(errno));
    }
    w->cur_done += nbytes;
    if (w->cur_done == t->nbytes) {
        w->cur++;
        w->cur_done = 0;
        while (w->cur < w->n && w->t[w->order[w->cur]].nbytes == 0) w->cur++;
    }
    return CT_OK;
}

ct_status ct_stw_finish(ct_stw *w, char *err, size_t errcap) {
    if (!w) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: NULL writer");
    if (!w->begun || w->finished) return ct_errf(err, errcap, CT_ERR_STATE, "st_write: finish without an open file");
    if (w->failed) return ct_errf(err, errcap, CT_ERR_STATE, "st_write: an earlier write failed");
    if (w->cur < w->n) {
        const stw_tensor *t = &w->t[w->order[w->cur]];
        return ct_errf(err, errcap, CT_ERR_STATE, "st_write: tensor '%s' got %llu of %llu bytes", t->name,
                       (unsigned long long)w->cur_done, (unsigned long long)t->nbytes);
    }
    int ok = fflush(w->fp) == 0 && !ferror(w->fp);
    int e = errno;
    if (fclose(w->fp) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    w->fp = NULL;
    if (!ok) {
        w->failed = 1;
        return ct_errf(err, errcap, CT_ERR_IO, "st_write: flushing '%s' failed: %s", w->tmp_path, strerror(e));
    }
    if (rename(w->tmp_path, w->path) != 0) {
        e = errno;
        w->failed = 1;
        return ct_errf(err, errcap, CT_ERR_IO, "st_write: rename to '%s' failed: %s", w->path, strerror(e));
    }
    w->finished = 1;
    return CT_OK;
}

ct_status ct_stw_meta(ct_stw *w, const char *key, const char *value, char *err, size_t errcap) {
    if (!w || !key || !key[0] || !value)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: NULL or empty metadata key/value");
    if (w->begun) return ct_errf(err, errcap, CT_ERR_STATE, "st_write: metadata after begin");
    for (size_t i = 0; i < w->n_meta; i++)
        if (!strcmp(w->meta[2 * i], key))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "st_write: metadata key '%s' given twice", key);
    char **m = realloc(w->meta, (2 * w->n_meta + 2) * sizeof *m);
    if (!m) return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
    w->meta = m;
    m[2 * w->n_meta] = strdup(key);
    m[2 * w->n_meta + 1] = strdup(value);
    w->n_meta++;
    if (!m[2 * w->n_meta - 2] || !m[2 * w->n_meta - 1])
        return ct_errf(err, errcap, CT_ERR_NOMEM, "st_write: out of memory");
    return CT_OK;
}

size_t ct_stw_count(const ct_stw *w) { return w ? w->n : 0; }

uint64_t ct_stw_header_len(const ct_stw *w) { return w ? w->header_len : 0; }

uint64_t ct_stw_data_len(const ct_stw *w) { return w ? w->data_len : 0; }

void ct_stw_free(ct_stw *w) {
    if (!w) return;
    if (w->fp) fclose(w->fp);
    if (w->begun && !w->finished && w->tmp_path) remove(w->tmp_path);
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < 2 * w->n_meta; i++) free(w->meta[i]);
    free(w->meta);
    free(w->t);
    free(w->order);
    free(w->path);
    free(w->tmp_path);
    free(w);
}
