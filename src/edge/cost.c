/* Cost model: bytes and multiply-adds per frame against the measured machine rates. */
#include "edge/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

#define Q4_GROUP 32 /* INT4 group size (kernels/ops.h CT_Q4_GROUP) */

static double interp(double a1, double an, int n, int t) {
    if (t <= 1 || n <= 1) return t <= 1 ? a1 : an;
    if (t >= n) return an;
    return a1 + (an - a1) * (double)(t - 1) / (double)(n - 1);
}

double ct_machine_read_gbs(const ct_machine *m, uint64_t bytes, int t) {
    if (!m || m->n_sizes < 1) return 1.0;
    int i = 0;
    while (i + 1 < m->n_sizes && m->bytes[i] < bytes) i++;
    double g = interp(m->gbs_1t[i], m->gbs_nt[i], m->n_threads, t);
    if (i > 0 && bytes < m->bytes[i] && bytes > m->bytes[i - 1]) { /* log-size between two points */
        double g0 = interp(m->gbs_1t[i - 1], m->gbs_nt[i - 1], m->n_threads, t);
        double f = log((double)bytes / (double)m->bytes[i - 1]) / log((double)m->bytes[i] / (double)m->bytes[i - 1]);
        g = g0 + (g - g0) * f;
    }
    return g > 1e-6 ? g : 1e-6;
}

double ct_machine_fma(const ct_machine *m, int t) {
    if (!m) return 1.0;
    double g = interp(m->fma_1t, m->fma_nt, m->n_threads, t);
    return g > 1e-6 ? g : 1e-6;
}

double ct_machine_prompt(const ct_machine *m, int f, int t) {
    if (!m || f < 0 || f >= CT_WF_COUNT) return 1.0;
    double g = interp(m->prompt_1t[f], m->prompt_nt[f], m->n_threads, t);
    return g > 1e-6 ? g : 1e-6;
}

static const char *const WF_NAMES[CT_WF_COUNT] = {"bf16", "int8", "int4"};

const char *ct_wformat_name(int f) { return f >= 0 && f < CT_WF_COUNT ? WF_NAMES[f] : "?"; }

int ct_wformat_parse(const char *s) {
    for (int i = 0; s && i < CT_WF_COUNT; i++)
        if (!strcmp(s, WF_NAMES[i])) return i;
    return -1;
}

uint64_t ct_matset_bytes(ct_matset s, int f, int head) {
    if (f == CT_WF_INT4 && head) f = CT_WF_INT8;
    switch (f) {
    case CT_WF_INT8: return s.elems + 4 * s.rows;                 /* i8 + an f32 scale per row */
    case CT_WF_INT4: return s.elems / 2 + 4 * (s.elems / Q4_GROUP); /* u4 + an f32 scale per group */
    default: return 2 * s.elems;                                  /* bf16 as stored */
    }
}

/* Matrices of one stack pass: q, k, v, o and the SwiGLU MLP of every layer. */
static ct_matset stack_set(const ct_stack_cfg *c) {
    uint64_t H = (uint64_t)c->hidden, q = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim,
             F = (uint64_t)c->ffn, L = (uint64_t)c->layers;
    ct_matset s = {L * (H * q + 2 * H * kv + q * H + 3 * H * F), L * (q + 2 * kv + H + 2 * F + H)};
    return s;
}

ct_status ct_model_shape_read(const char *dir, ct_model_shape *out, char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    ct_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory reading config");
    ct_status st = ct_config_load(dir, cfg, err, errcap);
    if (st == CT_OK) {
        out->talker = stack_set(&cfg->talker);
        out->talker_head = (ct_matset){(uint64_t)cfg->talker.vocab * cfg->talker.hidden, (uint64_t)cfg->talker.vocab};
        out->pred = stack_set(&cfg->pred);
        out->pred_head = (ct_matset){(uint64_t)cfg->pred.vocab * cfg->pred.hidden, (uint64_t)cfg->pred.vocab};
        if (cfg->pred.hidden != cfg->talker.hidden)
            out->proj = (ct_matset){(uint64_t)cfg->pred.hidden * cfg->talker.hidden, (uint64_t)cfg->pred.hidden};
        out->n_groups = cfg->n_groups;
        out->kv_bytes_per_token = 2ull * cfg->talker.layers * cfg->talker.kv_heads * cfg->talker.head_dim * 4ull;
    }
    free(cfg);
    return st;
}

uint64_t ct_cost_talker_bytes(const ct_model_shape *s, int ft) {
    return ct_matset_bytes(s->talker, ft, 0) + ct_matset_bytes(s->talker_head, ft, 1);
}

uint64_t ct_cost_pred_bytes(const ct_model_shape *s, int fp) {
    uint64_t passes = s->n_groups > 1 ? (uint64_t)(s->n_groups - 1) : 1;
    return passes * (ct_matset_bytes(s->pred, fp, 0) + ct_matset_bytes(s->pred_head, fp, 1)) +
           (uint64_t)s->n_groups * ct_matset_bytes(s->proj, fp, 0);
}

ct_cost_eff ct_cost_eff_default(void) {
    /* fitted to the stage costs measured on the reference machine of docs/EDGE.md 3 (AVX-512
       BF16/VNNI, no AMX, 2 vCPUs; docs/STREAMING.md's serial 2 and overlapped 1+1 tables): one
       token is bound by the dequantise + dot rate there, the predictor's weights read faster
       than DRAM (cache), the codec's chunked convolutions beat the simple FMA loop. Calibration
       replaces the predictions wherever it has run. */
    ct_cost_eff e = {{0.95, 0.95, 0.95}, {2.0, 2.0, 2.0}, {0.10, 0.19, 0.27}, {0.125, 0.365, 0.51}, {0.90, 0.65, 0.48}, 1.2};
    return e;
}

static double ms(double bytes_or_flops, double per_s) { return bytes_or_flops / per_s * 1e3; }

void ct_cost_predict(const ct_machine *m, const ct_model_shape *s, const ct_cost_eff *e,
                     const ct_cost_cfg *c, ct_cost *o) {
    ct_cost_eff ed = ct_cost_eff_default();
    if (!e) e = &ed;
    memset(o, 0, sizeof *o);
    int ft = c->talker_fmt >= 0 && c->talker_fmt < CT_WF_COUNT ? c->talker_fmt : 0;
    int fp = c->pred_fmt >= 0 && c->pred_fmt < CT_WF_COUNT ? c->pred_fmt : 0;
    int tt = c->talker_threads > 0 ? c->talker_threads : 1, n = c->streams > 0 ? c->streams : 1;
    int ct = c->serial ? tt : (c->codec_threads > 0 ? c->codec_threads : 1);
    uint64_t dram = m->n_sizes ? m->bytes[m->n_sizes - 1] : 0;
    /* talker: weights read once per step, compute grows with the batch, KV read per stream */
    uint64_t tb = ct_cost_talker_bytes(s, ft);
    double t_read = ms((double)tb, ct_machine_read_gbs(m, tb, tt) * 1e9 * e->talker_read[ft]);
    double t_flops = 2.0 * (double)(s->talker.elems + s->talker_head.elems);
    double t_comp = ms(n * t_flops, ct_machine_fma(m, tt) * 1e9 * e->talker_fma[ft]);
    double kv = (double)n * (c->context > 0 ? c->context : 0) * (double)s->kv_bytes_per_token;
    o->talker_ms = (t_read > t_comp ? t_read : t_comp) + ms(kv, ct_machine_read_gbs(m, dram, tt) * 1e9);
    /* predictor: n_groups-1 passes over its stack (its working set may stay in cache) */
    uint64_t pb = ct_cost_pred_bytes(s, fp), pass = ct_matset_bytes(s->pred, fp, 0);
    double p_read = ms((double)pb, ct_machine_read_gbs(m, pass, tt) * 1e9 * e->pred_read[fp]);
    double p_flops = 2.0 * (double)(s->n_groups - 1) * (double)(s->pred.elems + s->pred_head.elems);
    double p_comp = ms(n * p_flops, ct_machine_fma(m, tt) * 1e9 * e->pred_fma[fp]);
    o->predictor_ms = p_read > p_comp ? p_read : p_comp;
    /* codec: compute bound, not batched across streams */
    o->codec_ms = s->codec_macs > 0 ? ms(n * 2.0 * s->codec_macs, ct_machine_fma(m, ct) * 1e9 * e->codec_fma) : 0;
    double step = o->talker_ms + o->predictor_ms;
    o->frame_ms = c->serial ? step + o->codec_ms : (step > o->codec_ms ? step : o->codec_ms);
    o->rtf = o->frame_ms / CT_FRAME_MS;
    /* prefill: the prompt GEMM at its instruction's rate plus one weight read per 64-token pass */
    o->prefill_ms_per_token = ms(t_flops, ct_machine_prompt(m, ft, tt) * 1e9 * e->prefill[ft]) + t_read / 64.0;
}
