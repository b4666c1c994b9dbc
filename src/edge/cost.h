/* The cost model (docs/EDGE.md 3): per-stage milliseconds per frame predicted from the machine's
   measured rates (read bandwidth at the working-set sizes that matter, F32 FMA peak) and the
   model's shape (bytes per frame for each weight format, the codec's multiply-adds), for any
   thread count, placement and number of batched streams. Pure functions; the measuring lives
   in edge/roofline. */
#ifndef CT_EDGE_COST_H
#define CT_EDGE_COST_H

#include <stdint.h>

#include "core/status.h"

#define CT_COST_SIZES 8
#define CT_FRAME_MS 80.0

/* Transformer weight formats the cost model knows, best quality first. */
typedef enum { CT_WF_BF16 = 0, CT_WF_INT8, CT_WF_INT4, CT_WF_COUNT } ct_wformat;

/* What the machine does: read GB/s over buffers of bytes[i] (ascending; the last is far beyond
   the last-level cache) on 1 and n_threads threads; F32 FMA GFLOP/s at the selected kernel
   level's vector width; and per weight format the rate of the instruction its prompt matmuls
   run on the kernels measured with (ct_kernels_id()). */
typedef struct {
    int n_sizes;
    uint64_t bytes[CT_COST_SIZES];
    double gbs_1t[CT_COST_SIZES], gbs_nt[CT_COST_SIZES];
    double fma_1t, fma_nt;
    /* prompt matmuls of format f (ct_wformat): f32-equivalent GFLOP/s (2 per weight
       multiply-add; AMX on split activations takes two tile products for one) of the product
       instruction prompt_op[f] */
    double prompt_1t[CT_WF_COUNT], prompt_nt[CT_WF_COUNT];
    char prompt_op[CT_WF_COUNT][64];
    char kernels[96]; /* ct_kernels_id() when measured; "" for an estimate */
    int n_threads;
    char source[160]; /* "measured", "cache <path>", or "estimate: <why>" */
} ct_machine;

/* Read GB/s for a working set of `bytes` on t threads (the first measured size that holds it;
   threads interpolated between the 1- and n-thread figures, flat beyond n). */
double ct_machine_read_gbs(const ct_machine *m, uint64_t bytes, int t);
/* F32 FMA GFLOP/s on t threads (same interpolation). */
double ct_machine_fma(const ct_machine *m, int t);
/* The prompt matmuls' GFLOP/s for weight format f on t threads (same interpolation). */
double ct_machine_prompt(const ct_machine *m, int f, int t);

const char *ct_wformat_name(int f);   /* "bf16", "int8", "int4" */
int ct_wformat_parse(const char *s);  /* -1 if unknown */

/* A matrix set: elements and rows (rows carry the per-row / per-group scales). */
typedef struct {
    uint64_t elems, rows;
} ct_matset;

/* Bytes of a matrix set stored in format f ("head" = an output head: INT4 keeps heads INT8,
   as the loader does). */
uint64_t ct_matset_bytes(ct_matset s, int f, int head);

/* The model numbers the cost model needs. */
typedef struct {
    ct_matset talker, talker_head;   /* talker stack matrices; codec head */
    ct_matset pred, pred_head, proj; /* one predictor pass; one of its heads; the projection */
    int n_groups;                    /* codes per frame (16): n_groups-1 predictor passes */
    uint64_t kv_bytes_per_token;     /* the engine's f32 KV */
    double codec_macs;               /* codec multiply-adds per frame; 0 = unknown */
} ct_model_shape;

/* From dir/config.json (talker and predictor geometry; KV at f32). codec_macs is left 0. */
ct_status ct_model_shape_read(const char *dir, ct_model_shape *out, char *err, size_t errcap);

/* Per-frame bytes each stage reads for formats (talker ft, predictor fp). */
uint64_t ct_cost_talker_bytes(const ct_model_shape *s, int ft);
uint64_t ct_cost_pred_bytes(const ct_model_shape *s, int fp);

/* One configuration to price. */
typedef struct {
    int talker_fmt, pred_fmt;  /* ct_wformat */
    int serial;                /* 1: one pool runs step then codec; 0: overlapped */
    int talker_threads;        /* serial: the pool's threads */
    int codec_threads;         /* overlapped only */
    int streams;               /* batched streams, >= 1 */
    int context;               /* average KV positions read per stream per step */
} ct_cost_cfg;

/* Predicted costs of one frame period. */
typedef struct {
    double talker_ms, predictor_ms, codec_ms; /* per step (talker, predictor: batch of
                                                 `streams`); codec: all streams' frames */
    double frame_ms;   /* the period the engine needs per frame: serial = sum; overlapped =
                          max(talker + predictor, codec) */
    double rtf;        /* frame_ms / 80 */
    double prefill_ms_per_token;
} ct_cost;

/* Efficiency constants: the share of the roofline each kernel reaches (docs/EDGE.md 3). */
typedef struct {
    double talker_read[CT_WF_COUNT], pred_read[CT_WF_COUNT]; /* share of the read bandwidth */
    double talker_fma[CT_WF_COUNT], pred_fma[CT_WF_COUNT];   /* one-token matvec (dequantise +
                                                                dot) share of the FMA peak */
    double prefill[CT_WF_COUNT]; /* prompt GEMM share of its instruction's peak (ct_machine_prompt) */
    double codec_fma;   /* codec share of the FMA peak (chunked schedules) */
} ct_cost_eff;

ct_cost_eff ct_cost_eff_default(void);

/* Prices cfg on machine m for shape s. */
void ct_cost_predict(const ct_machine *m, const ct_model_shape *s, const ct_cost_eff *e,
                     const ct_cost_cfg *cfg, ct_cost *out);

#endif
