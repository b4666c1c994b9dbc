/* Codec program manifest: writer and validating reader (see codec_manifest.h). */
#include "export/codec_manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/fileio.h"
#include "core/sha256.h"

static json_t *shape2(int a, int b) { return json_pack("[i, i]", a, b); }

ct_status ct_codec_manifest_write(const char *dir, ct_codec_manifest *m, char *err, size_t errcap) {
    char path[2048], tmp[2100];
    json_t *man = json_object(), *progs = json_object(), *ramp = json_array();
    json_object_set_new(man, "manifest_version", json_integer(CT_MANIFEST_VERSION));
    json_object_set_new(man, "kind", json_string("codectalk.codec_programs"));
    json_object_set_new(man, "codec_id", json_string(m->codec_id));
    json_object_set_new(man, "model", json_string(m->model));
    json_object_set_new(man, "backend", json_string("onnx"));
    json_object_set_new(man, "partitioner", json_null());
    json_object_set_new(man, "opset", json_integer(18));
    json_object_set_new(man, "context_frames", json_integer(m->context_frames));
    json_object_set_new(man, "num_quantizers", json_integer(m->num_quantizers));
    json_object_set_new(man, "codebook_size", json_integer(m->codebook_size));
    json_object_set_new(man, "hop", json_integer(m->hop));
    json_object_set_new(man, "sample_rate", json_integer(m->sample_rate));
    for (int i = 0; i < m->n_ramp; i++) json_array_append_new(ramp, json_integer(m->ramp[i]));
    json_object_set_new(man, "ramp", ramp);
    ct_status st = CT_OK;
    for (int i = 0; i < m->n_programs && st == CT_OK; i++) {
        ct_manifest_program *p = &m->programs[i];
        snprintf(path, sizeof path, "%s/%s", dir, p->path);
        st = ct_sha256_file(path, p->sha256, err, errcap);
        if (st == CT_OK && p->external) {
            snprintf(path, sizeof path, "%s/%s", dir, p->data_path);
            st = ct_sha256_file(path, p->data_sha256, err, errcap);
        }
        if (st != CT_OK) break;
        json_t *j = json_object();
        json_object_set_new(j, "chunk_frames", json_integer(p->chunk_frames));
        json_object_set_new(j, "window_frames", json_integer(p->window_frames));
        json_object_set_new(j, "out_samples", json_integer(p->out_samples));
        json_object_set_new(j, "input",
                            json_pack("{s:s, s:s, s:[i, i, i]}", "name", "codes", "dtype", "int64", "shape", 1,
                                      m->num_quantizers, p->window_frames));
        json_object_set_new(
            j, "output",
            json_pack("{s:s, s:s, s:o}", "name", "wav", "dtype", "float32", "shape", shape2(1, p->out_samples)));
        json_object_set_new(j, "path", json_string(p->path));
        json_object_set_new(j, "sha256", json_string(p->sha256));
        json_object_set_new(j, "external_data", p->external ? json_true() : json_false());
        json_object_set_new(j, "data_path", p->external ? json_string(p->data_path) : json_null());
        json_object_set_new(j, "data_sha256", p->external ? json_string(p->data_sha256) : json_null());
        json_object_set_new(j, "bytes", json_integer((json_int_t)p->bytes));
        json_object_set_new(j, "weight_bytes", json_integer((json_int_t)p->weight_bytes));
        char key[16];
        snprintf(key, sizeof key, "%d", p->chunk_frames);
        json_object_set_new(progs, key, j);
    }
    json_object_set_new(man, "programs", progs);
    if (st == CT_OK) {
        snprintf(path, sizeof path, "%s/manifest.json", dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        if (json_dump_file(man, tmp, JSON_INDENT(2)) != 0)
            st = ct_errf(err, errcap, CT_ERR_IO, "%s: cannot write", tmp);
        else if (rename(tmp, path) != 0)
            st = ct_errf(err, errcap, CT_ERR_IO, "cannot rename %s: %s", tmp, strerror(errno));
        if (st != CT_OK) remove(tmp);
    }
    json_decref(man);
    return st;
}

/* ---- reader ---------------------------------------------------------------------------- */

/* An integer member in [lo, hi]; -1 (message in err) otherwise. */
static int get_int(json_t *o, const char *where, const char *k, long long lo, long long hi, long long *v, char *err,
                   size_t errcap) {
    json_t *x = json_object_get(o, k);
    if (!json_is_integer(x)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %s'%s' %s", where, k, x ? "is not an integer" : "is missing");
        return -1;
    }
    *v = json_integer_value(x);
    if (*v < lo || *v > hi) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %s'%s' = %lld is outside [%lld, %lld]", where, k, *v, lo, hi);
        return -1;
    }
    return 0;
}

/* A string member copied into dst[cap] (plain file names only when file is set). */
static int get_str(json_t *o, const char *where, const char *k, int file, char *dst, size_t cap, char *err,
                   size_t errcap) {
    json_t *x = json_object_get(o, k);
    const char *s = json_string_value(x);
    if (!s || strlen(s) >= cap || !s[0]) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %s'%s' %s", where, k,
                !x   ? "is missing"
                : !s ? "is not a string"
                     : "is empty or too long");
        return -1;
    }
    if (file && (strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)) {
        ct_errf(err, errcap, CT_ERR_FORMAT,
                "manifest: %s'%s' '%s' is not a plain file name in the manifest's directory", where, k, s);
        return -1;
    }
    snprintf(dst, cap, "%s", s);
    return 0;
}

static int is_hex64(const char *s) {
    if (strlen(s) != 64) return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    return 1;
}

/* A shape member {name, dtype, shape} equal to the expected one. */
static int check_io(json_t *o, const char *where, const char *k, const char *name, const char *dtype, int nd,
                    const long long *want, char *err, size_t errcap) {
    json_t *x = json_object_get(o, k), *sh = json_object_get(x, "shape");
    const char *n = json_string_value(json_object_get(x, "name")), *d = json_string_value(json_object_get(x, "dtype"));
    int ok = json_is_object(x) && n && d && !strcmp(n, name) && !strcmp(d, dtype) && json_is_array(sh) &&
             (int)json_array_size(sh) == nd;
    for (int i = 0; ok && i < nd; i++) ok = json_integer_value(json_array_get(sh, (size_t)i)) == want[i];
    if (!ok) {
        char w[96];
        int o2 = snprintf(w, sizeof w, "%s %s [", name, dtype);
        for (int i = 0; i < nd; i++) o2 += snprintf(w + o2, sizeof w - (size_t)o2, "%s%lld", i ? ", " : "", want[i]);
        snprintf(w + o2, sizeof w - (size_t)o2, "]");
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %s'%s' does not describe %s", where, k, w);
        return -1;
    }
    return 0;
}

static ct_status check_hash(const char *dir, const char *where, const char *file, const char *want, char *err,
                            size_t errcap) {
    char path[2048], hex[65];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    ct_status st = ct_sha256_file(path, hex, err, errcap);
    if (st != CT_OK) return st;
    if (strcmp(hex, want) != 0)
        return ct_errf(err, errcap, CT_ERR_FORMAT,
                       "manifest: %s'%s' has SHA-256 %s; the manifest says %s (a changed or "
                       "replaced program: re-export)",
                       where, file, hex, want);
    return CT_OK;
}

ct_status ct_codec_manifest_read(const char *dir, int check_files, ct_codec_manifest *m, char *err, size_t errcap) {
    memset(m, 0, sizeof *m);
    char path[2048], e2[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    char *text = NULL;
    size_t n = 0;
    if (ct_read_file(path, 1u << 20, &text, &n, e2, sizeof e2) != CT_OK)
        return ct_errf(err, errcap, CT_ERR_IO, "manifest %s cannot be opened (not an `export codec` directory?): %s",
                       path, e2);
    ct_status st = ct_codec_manifest_parse(text, n, dir, check_files, m, err, errcap);
    free(text);
    return st;
}

ct_status ct_codec_manifest_parse(const char *text, size_t len, const char *dir, int check_files, ct_codec_manifest *m,
                                  char *err, size_t errcap) {
    memset(m, 0, sizeof *m);
    char path[2048];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) return ct_errf(err, errcap, CT_ERR_FORMAT, "manifest %s: %s (line %d)", path, je.text, je.line);
    ct_status st = CT_ERR_FORMAT;
    long long v;
    json_t *ver = json_object_get(j, "manifest_version");
    if (!json_is_object(j)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest %s: not a JSON object", path);
        goto done;
    }
    if (!json_is_integer(ver)) {
        ct_errf(err, errcap, CT_ERR_FORMAT,
                "manifest %s: no manifest_version (written before manifests were "
                "versioned: re-export with `codectalk export codec`)",
                path);
        goto done;
    }
    if (json_integer_value(ver) != CT_MANIFEST_VERSION) {
        st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "manifest %s: version %lld; this codectalk reads version %d",
                     path, (long long)json_integer_value(ver), CT_MANIFEST_VERSION);
        goto done;
    }
    m->version = CT_MANIFEST_VERSION;
    if (get_str(j, "", "codec_id", 0, m->codec_id, sizeof m->codec_id, err, errcap)) goto done;
    if (strncmp(m->codec_id, "sha256:", 7) != 0 || !is_hex64(m->codec_id + 7)) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: 'codec_id' '%s' is not sha256:<64 hex digits>", m->codec_id);
        goto done;
    }
    json_t *model = json_object_get(j, "model");
    if (json_is_string(model)) snprintf(m->model, sizeof m->model, "%s", json_string_value(model));
    if (get_int(j, "", "context_frames", 0, 4096, &v, err, errcap)) goto done;
    m->context_frames = (int)v;
    if (get_int(j, "", "num_quantizers", 1, 64, &v, err, errcap)) goto done;
    m->num_quantizers = (int)v;
    if (get_int(j, "", "codebook_size", 1, 65536, &v, err, errcap)) goto done;
    m->codebook_size = (int)v;
    if (get_int(j, "", "hop", 1, 1 << 20, &v, err, errcap)) goto done;
    m->hop = (int)v;
    if (get_int(j, "", "sample_rate", 1, 1000000, &v, err, errcap)) goto done;
    m->sample_rate = (int)v;
    json_t *ramp = json_object_get(j, "ramp"), *progs = json_object_get(j, "programs");
    if (!json_is_array(ramp) || json_array_size(ramp) < 1 || json_array_size(ramp) > CT_EXPORT_MAX_PROGRAMS) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: 'ramp' must be an array of 1..%d chunk sizes",
                CT_EXPORT_MAX_PROGRAMS);
        goto done;
    }
    for (size_t i = 0; i < json_array_size(ramp); i++) {
        json_t *r = json_array_get(ramp, i);
        if (!json_is_integer(r) || json_integer_value(r) < 1 || json_integer_value(r) > 4096) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: 'ramp' entry %zu is not a chunk size in [1, 4096]", i);
            goto done;
        }
        m->ramp[m->n_ramp++] = (int)json_integer_value(r);
    }
    if (!json_is_object(progs) || json_object_size(progs) < 1 || json_object_size(progs) > CT_EXPORT_MAX_PROGRAMS) {
        ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: 'programs' must be an object of 1..%d programs",
                CT_EXPORT_MAX_PROGRAMS);
        goto done;
    }
    const char *key;
    json_t *p;
    json_object_foreach(progs, key, p) {
        ct_manifest_program *q = &m->programs[m->n_programs++];
        char where[64];
        snprintf(where, sizeof where, "program '%.20s': ", key);
        if (!json_is_object(p)) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %snot an object", where);
            goto done;
        }
        if (get_int(p, where, "chunk_frames", 1, 4096, &v, err, errcap)) goto done;
        q->chunk_frames = (int)v;
        char k2[16];
        snprintf(k2, sizeof k2, "%d", q->chunk_frames);
        if (strcmp(k2, key) != 0) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %schunk_frames is %d", where, q->chunk_frames);
            goto done;
        }
        if (get_int(p, where, "window_frames", 1, 8192, &v, err, errcap)) goto done;
        q->window_frames = (int)v;
        if (get_int(p, where, "out_samples", 1, 1LL << 31, &v, err, errcap)) goto done;
        q->out_samples = (int)v;
        if (q->window_frames != m->context_frames + q->chunk_frames || q->out_samples != q->chunk_frames * m->hop) {
            ct_errf(err, errcap, CT_ERR_FORMAT,
                    "manifest: %swindow_frames %d / out_samples %d; context %d + chunk %d "
                    "frames at hop %d need %d / %d",
                    where, q->window_frames, q->out_samples, m->context_frames, q->chunk_frames, m->hop,
                    m->context_frames + q->chunk_frames, q->chunk_frames * m->hop);
            goto done;
        }
        const long long in[3] = {1, m->num_quantizers, q->window_frames}, out[2] = {1, q->out_samples};
        if (check_io(p, where, "input", "codes", "int64", 3, in, err, errcap) ||
            check_io(p, where, "output", "wav", "float32", 2, out, err, errcap))
            goto done;
        if (get_str(p, where, "path", 1, q->path, sizeof q->path, err, errcap) ||
            get_str(p, where, "sha256", 0, q->sha256, sizeof q->sha256, err, errcap))
            goto done;
        if (!is_hex64(q->sha256)) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %s'sha256' is not 64 hex digits", where);
            goto done;
        }
        q->external = json_is_true(json_object_get(p, "external_data"));
        if (q->external && (get_str(p, where, "data_path", 1, q->data_path, sizeof q->data_path, err, errcap) ||
                            get_str(p, where, "data_sha256", 0, q->data_sha256, sizeof q->data_sha256, err, errcap)))
            goto done;
        if (q->external && !is_hex64(q->data_sha256)) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: %s'data_sha256' is not 64 hex digits", where);
            goto done;
        }
        json_t *b = json_object_get(p, "bytes"), *wb = json_object_get(p, "weight_bytes");
        q->bytes = json_is_integer(b) ? (uint64_t)json_integer_value(b) : 0;
        q->weight_bytes = json_is_integer(wb) ? (uint64_t)json_integer_value(wb) : 0;
        ct_status hs = check_files ? check_hash(dir, where, q->path, q->sha256, err, errcap) : CT_OK;
        if (hs == CT_OK && check_files && q->external)
            hs = check_hash(dir, where, q->data_path, q->data_sha256, err, errcap);
        if (hs != CT_OK) {
            st = hs;
            goto done;
        }
    }
    for (int i = 0; i < m->n_ramp; i++) {
        int found = 0;
        for (int k = 0; k < m->n_programs; k++) found |= m->programs[k].chunk_frames == m->ramp[i];
        if (!found) {
            ct_errf(err, errcap, CT_ERR_FORMAT, "manifest: the ramp's chunk size %d has no program", m->ramp[i]);
            goto done;
        }
    }
    st = CT_OK;
done:
    json_decref(j);
    if (st != CT_OK) m->version = 0;
    return st;
}

const ct_manifest_program *ct_codec_manifest_program(const ct_codec_manifest *m, int n) {
    const ct_manifest_program *best = NULL;
    for (int i = 0; i < m->n_programs; i++)
        if (m->programs[i].chunk_frames >= n && (!best || m->programs[i].chunk_frames < best->chunk_frames))
            best = &m->programs[i];
    return best;
}
