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

/* The class table, in ct_hw_class order. */
static const ct_class_consts CLASS_TABLE[CT_HW_CLASS_COUNT] = {
    /* npu_phone */
    {1, 2048, 16384, 1 * CT_GIB, 0.7, 4, 200, 1, 1, 0, 0.3},
    /* jetson */
    {2, 2048, 32768, 3 * CT_GIB, 0.7, 2, 80, 0, 1, 16 * CT_GIB, 0.8},
    /* cuda_discrete */
    {4, 4096, 65536, 2 * CT_GIB, 0.7, 2, 50, 0, 0, 8 * CT_GIB, 2.0},
    /* arm64_cpu */
    {1, 2048, 16384, 1 * CT_GIB, 0.7, 3, 160, 1, 1, 0, 0.4},
    /* x86_cpu */
    {2, 2048, 16384, 2 * CT_GIB, 0.7, 2, 120, 1, 1, 0, 1.0},
};

const ct_class_consts *ct_class_table(ct_hw_class c) {
    if (c < 0 || c >= CT_HW_CLASS_COUNT) c = CT_HW_X86_CPU;
    return &CLASS_TABLE[c];
}

int ct_dtype_bytes_by_name(const char *d) {
    if (!d) return 2;
    if (!strcmp(d, "f32") || !strcmp(d, "float32")) return 4;
    if (!strcmp(d, "fp8") || !strcmp(d, "float8_e4m3fn")) return 1;
    return 2; /* f16, bf16, float16, bfloat16, auto, unknown */
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

void ct_split_cpus(const int *cpus, int n, char *s0, size_t cap0, char *s1, size_t cap1) {
    if (n <= 0) {
        if (cap0) s0[0] = 0;
        if (cap1) s1[0] = 0;
        return;
    }
    long n0 = lround((double)n * 2.0 / 3.0);
    if (n0 < 1) n0 = 1;
    if (n > 1 && n0 > n - 1) n0 = n - 1;
    ct_cpu_range_str(cpus, (int)n0, s0, cap0);
    if (n0 < n) ct_cpu_range_str(cpus + n0, n - (int)n0, s1, cap1);
    else ct_cpu_range_str(cpus + n - 1, 1, s1, cap1);
}

static double gib(uint64_t b) { return (double)b / (double)CT_GIB; }

void ct_derive(const ct_hw_profile *hw, const ct_derive_in *in, ct_derived *o) {
    static const ct_derive_in none = {0, {0, 0, 0}, 0};
    if (!in) in = &none;
    memset(o, 0, sizeof *o);
    o->cls = ct_hw_classify(hw);
    const ct_class_consts *k = ct_class_table(o->cls);
    o->is_cuda = o->cls == CT_HW_JETSON || o->cls == CT_HW_CUDA_DISCRETE;
    snprintf(o->dtype, sizeof o->dtype, "%s",
             hw->supports_bf16 ? "bf16" : (o->is_cuda ? "f16" : "f32"));

    o->weights_bytes = in->weights_bytes;
    if (o->cls == CT_HW_CUDA_DISCRETE && hw->gpu_mem_bytes) o->pool_bytes = hw->gpu_mem_bytes;
    else if (o->cls == CT_HW_JETSON)
        o->pool_bytes = hw->gpu_mem_bytes ? hw->gpu_mem_bytes : hw->ram_total_bytes;
    else o->pool_bytes = hw->ram_available_bytes ? hw->ram_available_bytes : hw->ram_total_bytes;

    uint64_t act = (uint64_t)(0.15 * (double)o->weights_bytes);
    o->activation_bytes = act > 512 * CT_MIB ? act : 512 * CT_MIB;
    o->headroom_bytes = k->headroom_bytes;
    uint64_t need = o->weights_bytes + o->activation_bytes + o->headroom_bytes;
    o->budget_bytes = o->pool_bytes > need ? o->pool_bytes - need : 0;
    o->kv0_bytes = (uint64_t)floor(k->kv_share0 * (double)o->budget_bytes);
    if (o->kv0_bytes > o->budget_bytes) o->kv0_bytes = o->budget_bytes;
    o->kv1_bytes = o->budget_bytes - o->kv0_bytes;

    o->max_len0 = k->max_len0;
    o->max_len1 = k->max_len1;
    uint64_t bpt = ct_kv_bytes_per_token(&in->kv, ct_dtype_bytes_by_name(o->dtype));
    o->kv_bytes_per_token = bpt ? bpt : 8192;
    o->per_seq_bytes = ct_kv_bytes_for_seqs(1, o->max_len0, o->kv_bytes_per_token);
    int fit = ct_kv_max_seqs(o->kv0_bytes, o->max_len0, o->kv_bytes_per_token);
    o->max_num_seqs = fit < k->max_num_seqs ? fit : k->max_num_seqs;
    if (o->max_num_seqs < 1) o->max_num_seqs = 1;

    uint64_t vram = hw->gpu_mem_bytes ? hw->gpu_mem_bytes : hw->ram_total_bytes;
    o->small_vram = o->is_cuda && vram < k->small_vram_bytes;
    o->eager0 = k->eager0 || o->small_vram;
    o->eager1 = k->eager1 || o->small_vram;
    if (o->is_cuda && !o->eager0) {
        int v[3] = {1, 2, o->max_num_seqs};
        for (int i = 0; i < 3; i++) {
            int dup = 0;
            for (int j = 0; j < o->n_capture; j++) dup |= o->capture_sizes[j] == v[i];
            if (!dup) o->capture_sizes[o->n_capture++] = v[i];
        }
        for (int i = 1; i < o->n_capture; i++)
            for (int j = i; j > 0 && o->capture_sizes[j - 1] > o->capture_sizes[j]; j--) {
                int t = o->capture_sizes[j];
                o->capture_sizes[j] = o->capture_sizes[j - 1];
                o->capture_sizes[j - 1] = t;
            }
    }
    if (!o->is_cuda) {
        int big[CT_HW_MAX_CPUS];
        int n = ct_hw_big_cpus(hw, big, CT_HW_MAX_CPUS);
        if (in->max_cpus > 0 && n > in->max_cpus) n = in->max_cpus;
        o->cpu_bind = 1;
        ct_split_cpus(big, n, o->cpus0, sizeof o->cpus0, o->cpus1, sizeof o->cpus1);
    }
    o->chunk_adaptive = 1;
    o->chunk_min_frames = k->chunk_min_frames;
    o->chunk_margin_ms = k->chunk_margin_ms;
    o->decode_batch_max_size = 1;
    o->async_chunk = 1;

    o->load_s = o->weights_bytes ? (double)o->weights_bytes / (k->read_gbps * 1e9) : 60.0;
    o->compile_s = (o->eager0 && o->eager1) ? 0 : 240;
    int stage_init = (int)ceil(2.0 * (o->load_s + o->compile_s) + 60.0);
    o->stage_init_timeout_s = stage_init > 300 ? stage_init : 300;
    o->init_timeout_s = stage_init * 2 > 600 ? stage_init * 2 : 600;
    snprintf(o->notes[0], sizeof o->notes[0], "class=%s dtype=%s budget=%.2fGiB weights=%.2fGiB",
             ct_hw_class_name(o->cls), o->dtype, gib(o->budget_bytes), gib(o->weights_bytes));
    snprintf(o->notes[1], sizeof o->notes[1], "small_vram=%s eager=(%s,%s) max_num_seqs=%d",
             o->small_vram ? "true" : "false", o->eager0 ? "true" : "false",
             o->eager1 ? "true" : "false", o->max_num_seqs);
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
