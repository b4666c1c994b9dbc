/* The deploy plan (docs/EDGE.md 3): for each weight-format combination, the best placement and
   thread split on the usable CPUs, its single-stream RTF (measured by calibration when cached,
   else predicted by the cost model), and how many batched streams stay real time; then the
   choice: the highest-quality combination at or under the target RTF, else the fastest. */
#ifndef CT_EDGE_PLAN_H
#define CT_EDGE_PLAN_H

#include "edge/calibrate.h"
#include "edge/cost.h"

/* Format combinations, best quality first: talker/predictor bf16/bf16, int8/int8, int8/int4,
   int4/int4. */
#define CT_PLAN_OPTIONS 4

typedef struct {
    int talker_fmt, pred_fmt;   /* ct_wformat */
    ct_cost_cfg cfg;            /* the placement and threads chosen for it */
    ct_cost predicted;          /* single stream, cfg */
    int measured;               /* 1: a calibration run decided cfg and the figures below */
    ct_cal_run run;             /* that run */
    double frame_ms;            /* the figure used: the run's frame_ms, else predicted */
    double scale;               /* frame_ms / predicted frame_ms (prices batches) */
    int max_streams;            /* streams whose batched frame period stays under target x 80 ms */
    double frame_ms_fixed, frame_ms_per_stream; /* linear fit of the batched frame period */
} ct_plan_option;

typedef struct {
    double target_rtf;
    int n_cpus;
    int chosen;                 /* index into opt */
    int realtime;               /* opt[chosen] meets the target */
    ct_plan_option opt[CT_PLAN_OPTIONS];
} ct_plan;

/* Prices every combination on machine m for shape s with n_cpus usable CPUs (>= 1); cal[i]
   (may be NULL, or hold NULLs) is the calibration for combination i. context = average KV
   positions per stream the batched estimate assumes. */
void ct_plan_make(const ct_machine *m, const ct_model_shape *s, const ct_cost_eff *e, int n_cpus, double target_rtf,
                  int context, const ct_calibration *const *cal, ct_plan *out);

/* Combination i's formats. */
void ct_plan_formats(int i, int *talker_fmt, int *pred_fmt);

#endif
