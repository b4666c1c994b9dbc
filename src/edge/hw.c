/* Hardware profile helpers: flag normalisation, class rules, big-CPU list, JSON round trip and
   the CODECTALK_HW_PROFILE override (file path or inline JSON). */
#include "edge/hw.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

static const char *const FLAG_NAMES[CT_HWF_COUNT] = {
    "avx2",        "fma",      "f16c",     "avx512",     "avx512bw", "avx512vl", "avx512_bf16",
    "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8",   "neon",     "fp16_arith", "dotprod",
    "i8mm",        "bf16",     "sve",      "sve2",       "sme",
};

/* raw cpuinfo token -> stored flag, for the tokens whose name changes */
static const struct {
    const char *raw;
    ct_hw_flag flag;
} RENAMES[] = {
    {"avx512f", CT_HWF_AVX512},     {"asimd", CT_HWF_NEON},     {"asimdhp", CT_HWF_FP16_ARITH},
    {"asimddp", CT_HWF_DOTPROD},
};

static const char *const CLASS_NAMES[CT_HW_CLASS_COUNT] = {"npu_phone", "jetson", "cuda_discrete",
                                                            "arm64_cpu", "x86_cpu"};

void ct_hw_profile_init(ct_hw_profile *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->arch, sizeof p->arch, "unknown");
    p->numa_nodes = 1;
    snprintf(p->accelerator, sizeof p->accelerator, "none");
    p->supports_fp16 = 1;
    snprintf(p->host_os, sizeof p->host_os, "linux");
    snprintf(p->source, sizeof p->source, "probe");
}

const char *ct_hw_flag_name(ct_hw_flag f) {
    return (f >= 0 && f < CT_HWF_COUNT) ? FLAG_NAMES[f] : "?";
}

int ct_hw_flag_from_token(const char *tok, size_t len) {
    for (size_t i = 0; i < sizeof RENAMES / sizeof RENAMES[0]; i++)
        if (strlen(RENAMES[i].raw) == len && memcmp(RENAMES[i].raw, tok, len) == 0)
            return (int)RENAMES[i].flag;
    for (int f = 0; f < CT_HWF_COUNT; f++) {
        /* stored names that differ from a raw token are only accepted in their stored form */
        if (strlen(FLAG_NAMES[f]) == len && memcmp(FLAG_NAMES[f], tok, len) == 0) return f;
    }
    return -1;
}

int ct_hw_has(const ct_hw_profile *p, uint32_t mask) { return (p->flags & mask) == mask; }

const char *ct_hw_arch_from_flags(uint32_t flags) {
    uint32_t arm = CT_HWF_BIT(CT_HWF_NEON) | CT_HWF_BIT(CT_HWF_DOTPROD) | CT_HWF_BIT(CT_HWF_SVE) |
                   CT_HWF_BIT(CT_HWF_I8MM) | CT_HWF_BIT(CT_HWF_FP16_ARITH);
    uint32_t x86 = CT_HWF_BIT(CT_HWF_AVX2) | CT_HWF_BIT(CT_HWF_AVX512) |
                   CT_HWF_BIT(CT_HWF_AMX_TILE) | CT_HWF_BIT(CT_HWF_FMA);
    if (flags & arm) return "aarch64";
    if (flags & x86) return "x86_64";
    return "unknown";
}

ct_hw_class ct_hw_classify(const ct_hw_profile *p) {
    if (strncmp(p->accelerator, "npu", 3) == 0) return CT_HW_NPU_PHONE;
    if (strcmp(p->accelerator, "cuda_unified") == 0) return CT_HW_JETSON;
    if (strcmp(p->accelerator, "cuda_discrete") == 0) return CT_HW_CUDA_DISCRETE;
    if (strcmp(p->arch, "aarch64") == 0) return CT_HW_ARM64_CPU;
    return CT_HW_X86_CPU;
}

ct_hw_class ct_hw_engine_class(const ct_hw_profile *p) {
    /* CPU kernels are the only backend built: an accelerator never selects its class here */
    return strcmp(p->arch, "aarch64") == 0 ? CT_HW_ARM64_CPU : CT_HW_X86_CPU;
}

const char *ct_hw_class_name(ct_hw_class c) {
    return (c >= 0 && c < CT_HW_CLASS_COUNT) ? CLASS_NAMES[c] : "?";
}

int ct_hw_class_from_name(const char *name) {
    for (int c = 0; c < CT_HW_CLASS_COUNT; c++)
        if (strcmp(CLASS_NAMES[c], name) == 0) return c;
    return -1;
}

static int cpu_allowed(const ct_hw_profile *p, int cpu) {
    if (p->n_allowed_cpus <= 0) return 1;
    for (int i = 0; i < p->n_allowed_cpus; i++)
        if (p->allowed_cpus[i] == cpu) return 1;
    return 0;
}

int ct_hw_big_cpus(const ct_hw_profile *p, int *out, int cap) {
    int lim = cap;
    if (p->cgroup_cpus > 0) {
        int q = (int)p->cgroup_cpus;
        if ((double)q < p->cgroup_cpus) q++; /* ceil: 1.5 CPUs of quota keep 2 threads busy */
        if (q < lim) lim = q;
    }
    int n = 0;
    if (p->n_clusters > 0 && p->clusters[0].n_cpus > 0) {
        for (int i = 0; i < p->clusters[0].n_cpus && n < lim; i++)
            if (cpu_allowed(p, p->clusters[0].cpus[i])) out[n++] = p->clusters[0].cpus[i];
    } else {
        for (int i = 0; i < p->n_logical && n < lim; i++)
            if (cpu_allowed(p, i)) out[n++] = i;
    }
    if (n == 0) /* the mask excludes every big CPU: use what it allows */
        for (int i = 0; i < p->n_allowed_cpus && n < lim; i++) out[n++] = p->allowed_cpus[i];
    return n;
}

uint64_t ct_hw_usable_ram(const ct_hw_profile *p) {
    uint64_t ram = p->ram_available_bytes ? p->ram_available_bytes : p->ram_total_bytes;
    if (p->cgroup_mem_limit_bytes) {
        uint64_t lim = p->cgroup_mem_limit_bytes, used = p->cgroup_mem_used_bytes;
        uint64_t room = used < lim ? lim - used : 0;
        if (!ram || room < ram) ram = room;
    }
    return ram;
}

void ct_hw_note(ct_hw_profile *p, const char *fmt, ...) {
    size_t used = strlen(p->notes);
    if (used + 3 >= sizeof p->notes) return;
    if (used) {
        memcpy(p->notes + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->notes + used, sizeof p->notes - used, fmt, ap);
    va_end(ap);
}

/* ---- JSON ----------------------------------------------------------------------------- */

char *ct_hw_to_json(const ct_hw_profile *p, int pretty) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_t *flags = json_array(), *clusters = json_array(), *cap = json_array();
    for (int f = 0; f < CT_HWF_COUNT; f++)
        if (p->flags & CT_HWF_BIT(f)) json_array_append_new(flags, json_string(FLAG_NAMES[f]));
    /* sorted list of flag names (docs/EDGE.md 1, JSON form) */
    size_t nf = json_array_size(flags);
    for (size_t i = 1; i < nf; i++)
        for (size_t j = i; j > 0; j--) {
            json_t *a = json_array_get(flags, j - 1), *b = json_array_get(flags, j);
            if (strcmp(json_string_value(a), json_string_value(b)) <= 0) break;
            json_incref(a);
            json_array_set(flags, j - 1, b);
            json_array_set_new(flags, j, a);
        }
    for (int c = 0; c < p->n_clusters; c++) {
        json_t *cl = json_object(), *cpus = json_array();
        for (int i = 0; i < p->clusters[c].n_cpus; i++)
            json_array_append_new(cpus, json_integer(p->clusters[c].cpus[i]));
        json_object_set_new(cl, "max_khz", json_integer(p->clusters[c].max_khz));
        json_object_set_new(cl, "cpus", cpus);
        json_array_append_new(clusters, cl);
    }
    json_array_append_new(cap, json_integer(p->gpu_capability[0]));
    json_array_append_new(cap, json_integer(p->gpu_capability[1]));
    json_object_set_new(o, "arch", json_string(p->arch));
    json_object_set_new(o, "cpu_model", json_string(p->cpu_model));
    json_object_set_new(o, "cpu_flags", flags);
    json_object_set_new(o, "n_logical", json_integer(p->n_logical));
    json_object_set_new(o, "n_physical", json_integer(p->n_physical));
    json_object_set_new(o, "clusters", clusters);
    json_object_set_new(o, "numa_nodes", json_integer(p->numa_nodes));
    json_object_set_new(o, "ram_total_bytes", json_integer((json_int_t)p->ram_total_bytes));
    json_object_set_new(o, "ram_available_bytes", json_integer((json_int_t)p->ram_available_bytes));
    json_t *allowed = json_array();
    for (int i = 0; i < p->n_allowed_cpus; i++)
        json_array_append_new(allowed, json_integer(p->allowed_cpus[i]));
    json_object_set_new(o, "allowed_cpus", allowed);
    json_object_set_new(o, "cgroup_cpus", json_real(p->cgroup_cpus));
    json_object_set_new(o, "cgroup_mem_limit_bytes", json_integer((json_int_t)p->cgroup_mem_limit_bytes));
    json_object_set_new(o, "cgroup_mem_used_bytes", json_integer((json_int_t)p->cgroup_mem_used_bytes));
    json_object_set_new(o, "accelerator", json_string(p->accelerator));
    json_object_set_new(o, "gpu_name", json_string(p->gpu_name));
    json_object_set_new(o, "gpu_mem_bytes", json_integer((json_int_t)p->gpu_mem_bytes));
    json_object_set_new(o, "gpu_sm_count", json_integer(p->gpu_sm_count));
    json_object_set_new(o, "gpu_capability", cap);
    json_object_set_new(o, "gpu_integrated", json_boolean(p->gpu_integrated));
    json_object_set_new(o, "supports_bf16", json_boolean(p->supports_bf16));
    json_object_set_new(o, "supports_fp16", json_boolean(p->supports_fp16));
    json_object_set_new(o, "thermal_zones", json_integer(p->thermal_zones));
    json_object_set_new(o, "host_os", json_string(p->host_os));
    json_object_set_new(o, "source", json_string(p->source));
    json_object_set_new(o, "hardware_class", json_string(ct_hw_class_name(ct_hw_classify(p))));
    json_object_set_new(o, "engine_class", json_string(ct_hw_class_name(ct_hw_engine_class(p))));
    json_object_set_new(o, "notes", json_string(p->notes));
    char *s = json_dumps(o, (pretty ? JSON_INDENT(2) : JSON_COMPACT) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

typedef struct {
    const char *what;
    char *err;
    size_t cap;
} jctx;

static ct_status bad_key(const jctx *c, const char *key, const char *expect) {
    return ct_errf(c->err, c->cap, CT_ERR_FORMAT, "%s: key '%s': expected %s", c->what, key, expect);
}

static ct_status get_str(const jctx *c, json_t *o, const char *key, char *dst, size_t cap) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return CT_OK;
    if (!json_is_string(v)) return bad_key(c, key, "a string");
    if (json_string_length(v) >= cap) return bad_key(c, key, "a shorter string");
    snprintf(dst, cap, "%s", json_string_value(v));
    return CT_OK;
}

static ct_status get_u64(const jctx *c, json_t *o, const char *key, uint64_t *dst) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return CT_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return bad_key(c, key, "a non-negative integer");
    *dst = (uint64_t)json_integer_value(v);
    return CT_OK;
}

static ct_status get_int(const jctx *c, json_t *o, const char *key, int *dst, int lo, int hi) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return CT_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char want[64];
        snprintf(want, sizeof want, "an integer in [%d, %d]", lo, hi);
        return bad_key(c, key, want);
    }
    *dst = (int)json_integer_value(v);
    return CT_OK;
}

static ct_status get_bool(const jctx *c, json_t *o, const char *key, int *dst) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return CT_OK;
    if (!json_is_boolean(v)) return bad_key(c, key, "true or false");
    *dst = json_is_true(v);
    return CT_OK;
}

static ct_status parse_obj(const jctx *c, json_t *o, ct_hw_profile *p) {
    ct_status st;
    if ((st = get_str(c, o, "arch", p->arch, sizeof p->arch))) return st;
    if ((st = get_str(c, o, "cpu_model", p->cpu_model, sizeof p->cpu_model))) return st;
    json_t *fl = json_object_get(o, "cpu_flags");
    if (fl && !json_is_null(fl)) {
        if (!json_is_array(fl)) return bad_key(c, "cpu_flags", "a list of strings");
        size_t i;
        json_t *e;
        p->flags = 0;
        json_array_foreach(fl, i, e) {
            if (!json_is_string(e)) return bad_key(c, "cpu_flags", "a list of strings");
            int f = ct_hw_flag_from_token(json_string_value(e), json_string_length(e));
            if (f >= 0) p->flags |= CT_HWF_BIT(f); /* flags that do not matter are dropped */
        }
    }
    if ((st = get_int(c, o, "n_logical", &p->n_logical, 0, CT_HW_MAX_CPUS))) return st;
    if ((st = get_int(c, o, "n_physical", &p->n_physical, 0, CT_HW_MAX_CPUS))) return st;
    json_t *cl = json_object_get(o, "clusters");
    if (cl && !json_is_null(cl)) {
        if (!json_is_array(cl) || json_array_size(cl) > CT_HW_MAX_CLUSTERS)
            return bad_key(c, "clusters", "a list of at most 8 {max_khz, cpus} objects");
        p->n_clusters = 0;
        size_t i;
        json_t *e;
        json_array_foreach(cl, i, e) {
            char key[48];
            snprintf(key, sizeof key, "clusters[%zu]", i);
            if (!json_is_object(e)) return bad_key(c, key, "an object {max_khz, cpus}");
            ct_hw_cluster *k = &p->clusters[p->n_clusters];
            memset(k, 0, sizeof *k);
            json_t *mk = json_object_get(e, "max_khz"), *cpus = json_object_get(e, "cpus");
            snprintf(key, sizeof key, "clusters[%zu].max_khz", i);
            if (!json_is_integer(mk) || json_integer_value(mk) < 0 ||
                json_integer_value(mk) > 100000000)
                return bad_key(c, key, "a frequency in kHz");
            k->max_khz = (uint32_t)json_integer_value(mk);
            snprintf(key, sizeof key, "clusters[%zu].cpus", i);
            if (!json_is_array(cpus) || json_array_size(cpus) > CT_HW_MAX_CPUS)
                return bad_key(c, key, "a list of CPU ids");
            size_t j;
            json_t *x;
            json_array_foreach(cpus, j, x) {
                if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                    json_integer_value(x) >= CT_HW_MAX_CPUS)
                    return bad_key(c, key, "a list of CPU ids in [0, 255]");
                k->cpus[k->n_cpus++] = (int)json_integer_value(x);
            }
            p->n_clusters++;
        }
    }
    if ((st = get_int(c, o, "numa_nodes", &p->numa_nodes, 1, 1024))) return st;
    if ((st = get_u64(c, o, "ram_total_bytes", &p->ram_total_bytes))) return st;
    if ((st = get_u64(c, o, "ram_available_bytes", &p->ram_available_bytes))) return st;
    json_t *al = json_object_get(o, "allowed_cpus");
    if (al && !json_is_null(al)) {
        if (!json_is_array(al) || json_array_size(al) > CT_HW_MAX_CPUS)
            return bad_key(c, "allowed_cpus", "a list of CPU ids");
        p->n_allowed_cpus = 0;
        size_t i;
        json_t *e;
        json_array_foreach(al, i, e) {
            json_int_t v = json_is_integer(e) ? json_integer_value(e) : -1;
            int prev = p->n_allowed_cpus ? p->allowed_cpus[p->n_allowed_cpus - 1] : -1;
            if (v <= prev || v >= CT_HW_MAX_CPUS)
                return bad_key(c, "allowed_cpus", "an ascending list of CPU ids in [0, 255]");
            p->allowed_cpus[p->n_allowed_cpus++] = (int)v;
        }
    }
    json_t *cq = json_object_get(o, "cgroup_cpus");
    if (cq && !json_is_null(cq)) {
        double q = json_is_number(cq) ? json_number_value(cq) : -1;
        if (!(q >= 0 && q <= CT_HW_MAX_CPUS))
            return bad_key(c, "cgroup_cpus", "a CPU quota in [0, 256] (0 = no limit)");
        p->cgroup_cpus = q;
    }
    if ((st = get_u64(c, o, "cgroup_mem_limit_bytes", &p->cgroup_mem_limit_bytes))) return st;
    if ((st = get_u64(c, o, "cgroup_mem_used_bytes", &p->cgroup_mem_used_bytes))) return st;
    if ((st = get_str(c, o, "accelerator", p->accelerator, sizeof p->accelerator))) return st;
    if (strcmp(p->accelerator, "none") && strcmp(p->accelerator, "cuda_discrete") &&
        strcmp(p->accelerator, "cuda_unified") && strncmp(p->accelerator, "npu:", 4))
        return bad_key(c, "accelerator", "none, cuda_discrete, cuda_unified or npu:<vendor>");
    if ((st = get_str(c, o, "gpu_name", p->gpu_name, sizeof p->gpu_name))) return st;
    if ((st = get_u64(c, o, "gpu_mem_bytes", &p->gpu_mem_bytes))) return st;
    if ((st = get_int(c, o, "gpu_sm_count", &p->gpu_sm_count, 0, 1 << 20))) return st;
    json_t *cap = json_object_get(o, "gpu_capability");
    if (cap && !json_is_null(cap)) {
        if (!json_is_array(cap) || json_array_size(cap) != 2 ||
            !json_is_integer(json_array_get(cap, 0)) || !json_is_integer(json_array_get(cap, 1)) ||
            json_integer_value(json_array_get(cap, 0)) < 0 ||
            json_integer_value(json_array_get(cap, 0)) > 100 ||
            json_integer_value(json_array_get(cap, 1)) < 0 ||
            json_integer_value(json_array_get(cap, 1)) > 100)
            return bad_key(c, "gpu_capability", "[major, minor]");
        p->gpu_capability[0] = (int)json_integer_value(json_array_get(cap, 0));
        p->gpu_capability[1] = (int)json_integer_value(json_array_get(cap, 1));
    }
    if ((st = get_bool(c, o, "gpu_integrated", &p->gpu_integrated))) return st;
    if ((st = get_bool(c, o, "supports_bf16", &p->supports_bf16))) return st;
    if ((st = get_bool(c, o, "supports_fp16", &p->supports_fp16))) return st;
    if ((st = get_int(c, o, "thermal_zones", &p->thermal_zones, 0, 1 << 16))) return st;
    if ((st = get_str(c, o, "host_os", p->host_os, sizeof p->host_os))) return st;
    if (p->n_physical == 0) p->n_physical = p->n_logical;
    return CT_OK;
}

ct_status ct_hw_from_json(const char *text, size_t len, const char *what, ct_hw_profile *out,
                          char *err, size_t errcap) {
    jctx c = {what ? what : "inline", err, errcap};
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%d:%d: %s", c.what, je.line, je.column,
                       je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return ct_errf(err, errcap, CT_ERR_FORMAT, "%s:1: the hardware profile must be a JSON object",
                       c.what);
    }
    ct_hw_profile p;
    ct_hw_profile_init(&p);
    ct_status st = parse_obj(&c, root, &p);
    json_decref(root);
    if (st != CT_OK) return st;
    snprintf(p.source, sizeof p.source, "override:%.150s", c.what);
    *out = p;
    return CT_OK;
}

ct_status ct_hw_load_override(const char *value, ct_hw_profile *out, char *err, size_t errcap) {
    if (!value) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "hardware override: no value");
    const char *v = value;
    while (*v && isspace((unsigned char)*v)) v++;
    if (*v == '{') return ct_hw_from_json(v, strlen(v), "inline", out, err, errcap);
    char *buf = NULL;
    size_t n = 0;
    ct_status st = ct_read_file(v, 1u << 20, &buf, &n, err, errcap);
    if (st != CT_OK) return st;
    st = ct_hw_from_json(buf, n, v, out, err, errcap);
    free(buf);
    return st;
}
