/* Machine rates: the roofline cache per fingerprint and the probe-only estimate. */
#include "edge/machine.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "edge/calibrate.h"
#include "edge/roofline.h"
#include "kernels/cpu.h"

void ct_machine_estimate(const ct_hw_profile *hw, int n_threads, const char *why, ct_machine *out) {
    memset(out, 0, sizeof *out);
    if (n_threads < 1) n_threads = 1;
    int lanes = ct_hw_has(hw, CT_HWF_BIT(CT_HWF_AVX512)) ? 16 : ct_hw_has(hw, CT_HWF_BIT(CT_HWF_AVX2)) ? 8
                : ct_hw_has(hw, CT_HWF_BIT(CT_HWF_NEON))                                               ? 4
                                                                                                     : 1;
    double ghz = hw->n_clusters > 0 && hw->clusters[0].max_khz ? hw->clusters[0].max_khz / 1e6 : 2.5;
    double gbs = strcmp(hw->arch, "aarch64") == 0 ? 8.0 : 20.0;
    out->n_sizes = 1;
    out->bytes[0] = 512ull << 20;
    out->gbs_1t[0] = out->gbs_nt[0] = gbs;
    out->fma_1t = 2.0 * lanes * 2.0 * ghz;
    out->fma_nt = out->fma_1t * n_threads;
    for (int f = 0; f < CT_WF_COUNT; f++) {
        out->prompt_1t[f] = out->fma_1t, out->prompt_nt[f] = out->fma_nt;
        snprintf(out->prompt_op[f], sizeof out->prompt_op[f], "f32 FMA (estimated)");
    }
    out->n_threads = n_threads;
    snprintf(out->source, sizeof out->source, "estimate: %s", why ? why : "not measured");
}

char *ct_machine_to_json(const ct_machine *m) {
    json_t *o = json_object(), *a = json_array();
    if (!o || !a) {
        json_decref(o);
        json_decref(a);
        return NULL;
    }
    for (int i = 0; i < m->n_sizes; i++)
        json_array_append_new(a, json_pack("{s:I, s:f, s:f}", "bytes", (json_int_t)m->bytes[i], "gbs_1t",
                                           m->gbs_1t[i], "gbs_nt", m->gbs_nt[i]));
    json_object_set_new(o, "schema", json_integer(CT_MACHINE_SCHEMA));
    json_object_set_new(o, "n_threads", json_integer(m->n_threads));
    json_object_set_new(o, "fma_gflops_1t", json_real(m->fma_1t));
    json_object_set_new(o, "fma_gflops_nt", json_real(m->fma_nt));
    json_object_set_new(o, "kernels", json_string(m->kernels));
    json_t *pr = json_array();
    for (int f = 0; f < CT_WF_COUNT; f++)
        json_array_append_new(pr, json_pack("{s:s, s:s, s:f, s:f}", "format", ct_wformat_name(f), "op",
                                            m->prompt_op[f], "gflops_1t", m->prompt_1t[f], "gflops_nt",
                                            m->prompt_nt[f]));
    json_object_set_new(o, "prompt", pr);
    json_object_set_new(o, "read", a);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static int num(json_t *o, const char *k, double lo, double hi, double *v) {
    json_t *x = json_object_get(o, k);
    if (!json_is_number(x) || !isfinite(json_number_value(x)) || json_number_value(x) < lo ||
        json_number_value(x) > hi)
        return 0;
    *v = json_number_value(x);
    return 1;
}

ct_status ct_machine_from_json(const char *text, size_t len, ct_machine *out, char *err, size_t errcap) {
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return ct_errf(err, errcap, CT_ERR_FORMAT, "line %d:%d: %s", je.line, je.column, je.text);
    ct_machine m;
    memset(&m, 0, sizeof m);
    const char *bad = NULL;
    double d;
    json_t *a = json_object_get(o, "read");
    if (!json_is_object(o)) bad = "(root)";
    else if (!num(o, "schema", CT_MACHINE_SCHEMA, CT_MACHINE_SCHEMA, &d)) bad = "schema";
    else if (!num(o, "n_threads", 1, 4096, &d)) bad = "n_threads";
    else if (m.n_threads = (int)d, !num(o, "fma_gflops_1t", 0.01, 1e7, &m.fma_1t)) bad = "fma_gflops_1t";
    else if (!num(o, "fma_gflops_nt", 0.01, 1e7, &m.fma_nt)) bad = "fma_gflops_nt";
    else if (!json_is_string(json_object_get(o, "kernels")) ||
             strlen(json_string_value(json_object_get(o, "kernels"))) >= sizeof m.kernels)
        bad = "kernels";
    else if (snprintf(m.kernels, sizeof m.kernels, "%s", json_string_value(json_object_get(o, "kernels"))),
             !json_is_array(json_object_get(o, "prompt")) || json_array_size(json_object_get(o, "prompt")) != CT_WF_COUNT)
        bad = "prompt";
    else if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > CT_COST_SIZES) bad = "read";
    else
        for (size_t i = 0; i < json_array_size(a) && !bad; i++) {
            json_t *e = json_array_get(a, i);
            double b;
            if (!num(e, "bytes", 4096, 1e13, &b) || !num(e, "gbs_1t", 0.001, 1e5, &m.gbs_1t[i]) ||
                !num(e, "gbs_nt", 0.001, 1e5, &m.gbs_nt[i]) || (i && (uint64_t)b <= m.bytes[i - 1]))
                bad = "read[]";
            m.bytes[i] = (uint64_t)b;
            m.n_sizes = (int)i + 1;
        }
    for (int f = 0; f < CT_WF_COUNT && !bad; f++) {
        json_t *e = json_array_get(json_object_get(o, "prompt"), (size_t)f);
        const char *fm = json_string_value(json_object_get(e, "format")), *op = json_string_value(json_object_get(e, "op"));
        if (!fm || ct_wformat_parse(fm) != f || !op || strlen(op) >= sizeof m.prompt_op[f] ||
            !num(e, "gflops_1t", 0.01, 1e7, &m.prompt_1t[f]) || !num(e, "gflops_nt", 0.01, 1e7, &m.prompt_nt[f]))
            bad = "prompt[]";
        else
            snprintf(m.prompt_op[f], sizeof m.prompt_op[f], "%s", op);
    }
    json_decref(o);
    if (bad) return ct_errf(err, errcap, CT_ERR_FORMAT, "key '%s' missing or invalid", bad);
    *out = m;
    return CT_OK;
}

void ct_machine_get(const char *cache_dir, const char *fp, const ct_hw_profile *hw, int n_threads, int no_measure,
                    ct_machine *out, char *note, size_t notecap) {
    if (notecap) note[0] = 0;
    if (n_threads < 1) n_threads = 1;
    char root[1024], path[1200] = "", e[256];
    int have_path = ct_cache_root(cache_dir, root, sizeof root, e, sizeof e) == CT_OK &&
                    snprintf(path, sizeof path, "%s/roofline/%s.json", root, fp) < (int)sizeof path;
    if (have_path && ct_file_exists(path)) {
        char *buf = NULL;
        size_t n = 0;
        if (ct_read_file(path, 1u << 16, &buf, &n, e, sizeof e) == CT_OK &&
            ct_machine_from_json(buf, n, out, e, sizeof e) == CT_OK) {
            free(buf);
            if (out->n_threads == n_threads && strcmp(out->kernels, ct_kernels_id()) == 0) {
                snprintf(out->source, sizeof out->source, "cache %.140s", path);
                return;
            }
            if (out->n_threads != n_threads)
                snprintf(e, sizeof e, "measured for %d threads, not %d", out->n_threads, n_threads);
            else
                snprintf(e, sizeof e, "measured with kernels '%.90s', not '%.90s'", out->kernels, ct_kernels_id());
        } else {
            free(buf);
        }
        ct_errf(note, notecap, CT_OK, "roofline cache '%s' ignored (%s); ", path, e);
    }
    if (no_measure) {
        ct_machine_estimate(hw, n_threads, "measuring switched off", out);
        size_t u = strlen(note);
        ct_errf(note + u, notecap - u, CT_OK, "cost model uses the probe's figures (measuring switched off)");
        return;
    }
    static const uint64_t sizes[] = {8ull << 20, 32ull << 20, 128ull << 20, 512ull << 20};
    if (ct_roofline_machine(n_threads, sizes, (int)(sizeof sizes / sizeof *sizes), out, e, sizeof e) != CT_OK) {
        char why[300];
        snprintf(why, sizeof why, "the roofline could not run: %s", e);
        ct_machine_estimate(hw, n_threads, why, out);
        size_t u = strlen(note);
        ct_errf(note + u, notecap - u, CT_OK, "cost model uses the probe's figures (%s)", why);
        return;
    }
    /* FMA throughput is a per-core constant: another process busy on a core while this measured
       must not make n threads look no faster than one */
    int cores = hw->n_physical > 0 && hw->n_physical < n_threads ? hw->n_physical : n_threads;
    if (out->fma_nt < out->fma_1t * cores) out->fma_nt = out->fma_1t * cores;
    for (int f = 0; f < CT_WF_COUNT; f++)
        if (out->prompt_nt[f] < out->prompt_1t[f] * cores) out->prompt_nt[f] = out->prompt_1t[f] * cores;
    char *js = have_path ? ct_machine_to_json(out) : NULL;
    if (js && (ct_mkdir_parents(path, e, sizeof e) != CT_OK ||
               ct_write_file_atomic(path, js, strlen(js), e, sizeof e) != CT_OK)) {
        size_t u = strlen(note);
        ct_errf(note + u, notecap - u, CT_OK, "roofline measured but not cached (%s)", e);
    }
    free(js);
}
