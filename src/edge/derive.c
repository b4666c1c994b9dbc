/* Derived overrides and the no-preemption KV admission helpers (docs/EDGE.md 2),
   plus the two model-directory readers they need (weights bytes, talker KV geometry). */
#include "edge/derive.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors.h"
#include "model/config.h"

/* The class table, in ct_hw_class order (only the CPU classes are engine classes in this build). */
static const ct_class_consts CLASS_TABLE[CT_HW_CLASS_COUNT] = {
    /* npu_phone */ {1, 2048, 1 * CT_GIB, 4, 200},
    /* jetson */ {2, 2048, 3 * CT_GIB, 2, 80},
    /* cuda_discrete */ {4, 4096, 2 * CT_GIB, 2, 50},
    /* arm64_cpu */ {4, 2048, 1 * CT_GIB, 3, 160},
    /* x86_cpu */ {8, 2048, 2 * CT_GIB, 2, 120},
};

const ct_class_consts *ct_class_table(ct_hw_class c) {
    if (c < 0 || c >= CT_HW_CLASS_COUNT) c = CT_HW_X86_CPU;
    return &CLASS_TABLE[c];
}

uint64_t ct_kv_bytes_per_token(const ct_kv_geometry *g, int dtype_bytes) {
    if (!g || g->layers <= 0 || g->kv_heads <= 0 || g->head_dim <= 0 || dtype_bytes <= 0) return 0;
    return 2ull * (uint64_t)g->layers * (uint64_t)g->kv_heads * (uint64_t)g->head_dim *
           (uint64_t)dtype_bytes;
}

uint64_t ct_kv_bytes_for_seqs(int n, int max_len, uint64_t bpt) {
    if (n <= 0 || max_len <= 0) return 0;
    uint64_t blocks = ((uint64_t)max_len + 15u) / 16u;
    return (uint64_t)n * blocks * 16u * bpt;
}

int ct_kv_max_seqs(uint64_t kv_bytes, int max_len, uint64_t bpt) {
    uint64_t one = ct_kv_bytes_for_seqs(1, max_len, bpt);
    if (one == 0) return 0;
    uint64_t n = kv_bytes / one;
    return n > 1000000 ? 1000000 : (int)n;
}

int ct_kv_admission_ok(uint64_t kv_bytes, int max_len, uint64_t bpt, int max_num_seqs) {
    return ct_kv_max_seqs(kv_bytes, max_len, bpt) >= max_num_seqs;
}

char *ct_cpu_range_str(const int *cpus, int n, char *buf, size_t cap) {
    size_t used = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1) j++;
        char part[32];
        if (j > i) snprintf(part, sizeof part, "%s%d-%d", used ? "," : "", cpus[i], cpus[j]);
        else snprintf(part, sizeof part, "%s%d", used ? "," : "", cpus[i]);
        size_t pl = strlen(part);
        if (used + pl + 1 > cap) break;
        memcpy(buf + used, part, pl + 1);
        used += pl;
        i = j + 1;
    }
    return buf;
}

ct_status ct_cpu_range_parse(const char *s, int *cpus, int cap, int *n, char *err, size_t errcap) {
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9') goto bad;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9') goto bad;
            b = strtol(p, &end, 10);
            p = end;
        }
        if (a < 0 || b < a || b >= CT_HW_MAX_CPUS) goto bad;
        for (long c = a; c <= b; c++) {
            if (*n >= cap) goto bad;
            cpus[(*n)++] = (int)c;
        }
        if (*p == ',') {
            p++;
            if (!*p) goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    return CT_OK;
bad:
    return ct_errf(err, errcap, CT_ERR_FORMAT,
                   "CPU list '%.64s': expected ids 0-255 as 'a-b,c' ranges", s);
}

static double gib(uint64_t b) { return (double)b / (double)CT_GIB; }

void ct_derive(const ct_hw_profile *hw, const ct_derive_in *in, ct_derived *o) {
    static const ct_derive_in none = {0, {0, 0, 0}, 0};
    if (!in) in = &none;
    memset(o, 0, sizeof *o);
    o->cls = ct_hw_engine_class(hw);
    const ct_class_consts *k = ct_class_table(o->cls);
    o->weights_bytes = in->weights_bytes;
    o->pool_bytes = ct_hw_usable_ram(hw);
    uint64_t act = (uint64_t)(0.15 * (double)o->weights_bytes);
    o->activation_bytes = act > 512 * CT_MIB ? act : 512 * CT_MIB;
    o->headroom_bytes = k->headroom_bytes;
    uint64_t need = o->weights_bytes + o->activation_bytes + o->headroom_bytes;
    o->budget_bytes = o->pool_bytes > need ? o->pool_bytes - need : 0;
    o->max_context = k->max_context;
    uint64_t bpt = ct_kv_bytes_per_token(&in->kv, 4); /* the engine's KV is f32 */
    o->kv_bytes_per_token = bpt ? bpt : 8192;
    o->per_seq_bytes = ct_kv_bytes_for_seqs(1, o->max_context, o->kv_bytes_per_token);
    int fit = ct_kv_max_seqs(o->budget_bytes, o->max_context, o->kv_bytes_per_token);
    o->max_streams_mem = fit < k->max_streams ? fit : k->max_streams;
    if (o->max_streams_mem < 1) o->max_streams_mem = 1;
    o->kv_budget_bytes = (uint64_t)o->max_streams_mem * o->per_seq_bytes;
    o->n_cpus = ct_hw_big_cpus(hw, o->cpus, CT_HW_MAX_CPUS);
    if (in->max_cpus > 0 && o->n_cpus > in->max_cpus) o->n_cpus = in->max_cpus;
    o->chunk_min_frames = k->chunk_min_frames;
    o->chunk_margin_ms = k->chunk_margin_ms;
    snprintf(o->notes[0], sizeof o->notes[0], "class=%s pool=%.2fGiB budget=%.2fGiB weights=%.2fGiB",
             ct_hw_class_name(o->cls), gib(o->pool_bytes), gib(o->budget_bytes), gib(o->weights_bytes));
    char cpus[128];
    snprintf(o->notes[1], sizeof o->notes[1], "cpus=%s kv/token=%lluB streams(memory)=%d",
             ct_cpu_range_str(o->cpus, o->n_cpus, cpus, sizeof cpus), (unsigned long long)o->kv_bytes_per_token,
             o->max_streams_mem);
}

/* ---- model directory -------------------------------------------------------------------- */

static ct_status walk(const char *dir, int depth, uint64_t *sum, int *files, char *err, size_t errcap) {
    DIR *d = opendir(dir);
    if (!d) return ct_errf(err, errcap, CT_ERR_IO, "cannot list model directory '%s'", dir);
    ct_status st = CT_OK;
    struct dirent *de;
    while (st == CT_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char p[2048];
        int n = snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (n < 0 || (size_t)n >= sizeof p) continue;
        struct stat sb;
        if (stat(p, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth < 3) st = walk(p, depth + 1, sum, files, err, errcap);
            continue;
        }
        size_t l = strlen(de->d_name);
        if (!S_ISREG(sb.st_mode) || l < 12 || strcmp(de->d_name + l - 12, ".safetensors") != 0)
            continue;
        ct_st_file *f = NULL;
        char e2[256];
        st = ct_st_open(p, &f, e2, sizeof e2);
        if (st != CT_OK) {
            ct_errf(err, errcap, st, "weights '%s': %s", p, e2);
            break;
        }
        for (size_t i = 0; i < ct_st_count(f); i++) *sum += ct_st_at(f, i)->nbytes;
        ct_st_close(f);
        (*files)++;
    }
    closedir(d);
    return st;
}

ct_status ct_model_weights_bytes(const char *dir, uint64_t *out, char *err, size_t errcap) {
    uint64_t sum = 0;
    int files = 0;
    *out = 0;
    ct_status st = walk(dir, 0, &sum, &files, err, errcap);
    if (st == CT_OK) *out = sum;
    return st;
}

ct_status ct_model_kv_geometry(const char *dir, ct_kv_geometry *out, char *err, size_t errcap) {
    ct_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory reading config");
    ct_status st = ct_config_load(dir, cfg, err, errcap);
    if (st == CT_OK) {
        out->layers = cfg->talker.layers;
        out->kv_heads = cfg->talker.kv_heads;
        out->head_dim = cfg->talker.head_dim;
    }
    free(cfg);
    return st;
}
