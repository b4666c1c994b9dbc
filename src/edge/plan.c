/* Deploy plan: format, placement, threads and stream count from the cost model and calibration. */
#include "edge/plan.h"

#include <string.h>

static const int FORMATS[CT_PLAN_OPTIONS][2] = {
    {CT_WF_BF16, CT_WF_BF16}, {CT_WF_INT8, CT_WF_INT8}, {CT_WF_INT8, CT_WF_INT4}, {CT_WF_INT4, CT_WF_INT4}};

void ct_plan_formats(int i, int *tf, int *pf) {
    if (i < 0 || i >= CT_PLAN_OPTIONS) i = 0;
    *tf = FORMATS[i][0];
    *pf = FORMATS[i][1];
}

/* The best placement for one stream: serial on every CPU, or overlapped with t talker threads
   and n - t codec threads. */
static void best_cfg(const ct_machine *m, const ct_model_shape *s, const ct_cost_eff *e, int n, int tf, int pf,
                     int context, ct_cost_cfg *best, ct_cost *bc) {
    ct_cost_cfg c = {tf, pf, 1, n, 0, 1, context};
    ct_cost_predict(m, s, e, &c, bc);
    *best = c;
    for (int t = 1; t < n; t++) {
        ct_cost_cfg o = {tf, pf, 0, t, n - t, 1, context};
        ct_cost k;
        ct_cost_predict(m, s, e, &o, &k);
        if (k.frame_ms < bc->frame_ms) {
            *best = o;
            *bc = k;
        }
    }
}

void ct_plan_make(const ct_machine *m, const ct_model_shape *s, const ct_cost_eff *e, int n_cpus, double target,
                  int context, const ct_calibration *const *cal, ct_plan *out) {
    memset(out, 0, sizeof *out);
    if (n_cpus < 1) n_cpus = 1;
    out->n_cpus = n_cpus;
    out->target_rtf = target;
    out->chosen = -1;
    int fastest = 0;
    for (int i = 0; i < CT_PLAN_OPTIONS; i++) {
        ct_plan_option *o = &out->opt[i];
        o->talker_fmt = FORMATS[i][0];
        o->pred_fmt = FORMATS[i][1];
        best_cfg(m, s, e, n_cpus, o->talker_fmt, o->pred_fmt, context, &o->cfg, &o->predicted);
        o->frame_ms = o->predicted.frame_ms;
        const ct_cal_run *r = cal && cal[i] ? ct_cal_best_run(cal[i]) : NULL;
        if (r) { /* measured wins: its placement, its frame period */
            o->measured = 1;
            o->run = *r;
            o->cfg.serial = r->serial;
            o->cfg.talker_threads = r->talker_threads;
            o->cfg.codec_threads = r->serial ? 0 : r->codec_threads;
            ct_cost_predict(m, s, e, &o->cfg, &o->predicted);
            o->frame_ms = r->frame_ms;
        }
        o->scale = o->predicted.frame_ms > 0 ? o->frame_ms / o->predicted.frame_ms : 1.0;
        /* batched streams: the cost model's growth, scaled to the measured single-stream figure */
        ct_cost_cfg b = o->cfg;
        double f1 = o->frame_ms, f2;
        b.streams = 2;
        ct_cost k;
        ct_cost_predict(m, s, e, &b, &k);
        f2 = k.frame_ms * o->scale;
        o->frame_ms_per_stream = f2 > f1 ? f2 - f1 : 0;
        o->frame_ms_fixed = f1 - o->frame_ms_per_stream > 0 ? f1 - o->frame_ms_per_stream : 0;
        o->max_streams = 0;
        for (int n = 1; n <= 64; n++) {
            b.streams = n;
            ct_cost_predict(m, s, e, &b, &k);
            if (k.frame_ms * o->scale > target * CT_FRAME_MS) break;
            o->max_streams = n;
        }
        if (o->frame_ms < out->opt[fastest].frame_ms) fastest = i;
        if (out->chosen < 0 && o->frame_ms <= target * CT_FRAME_MS) out->chosen = i;
    }
    out->realtime = out->chosen >= 0;
    if (out->chosen < 0) out->chosen = fastest;
}
