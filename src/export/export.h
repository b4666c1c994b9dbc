/* On-device exports (docs/EXPORT.md): the talker / code-predictor one-token decode step with
   explicit per-layer KV cache, the codec decoder as stateless windowed programs, and the
   ONNX sanitizer. Each writes ONNX (opset 18) files plus a JSON sidecar / manifest. */
#ifndef CT_EXPORT_H
#define CT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "codectalk.h"

/* Export options for a decode step. */
typedef struct {
    int predictor;     /* 0: talker, 1: code predictor */
    int cache_len;     /* L: cache positions per layer (1..32768; predictor <= 16 recommended) */
    int fp16;          /* 1: FP16 weights / inputs / outputs (norms and softmax in FP32) */
    int layout_v1;     /* 1: the seed's v1 layout (stacked [layers,...] cache + Gather, expanded GQA) */
    int external;      /* 1: force external data (automatic above ~2 GB) */
} ct_export_step_opts;

/* What an export wrote. */
typedef struct {
    char onnx_path[1024];
    char json_path[1024];
    uint64_t file_bytes;        /* .onnx plus its .data blob */
    uint64_t weight_bytes;      /* initializer bytes = weight bytes read per step */
    int external;               /* 1: weights in <onnx>.data */
    int n_inputs, n_outputs;
} ct_export_result;

/* Writes <out_dir>/<component>_step_L<len>[_fp16][_v1].onnx and the .json sidecar for the
   model loaded from model_dir (m; weights in any load format are converted to FP32/FP16).
   Checks the options before any work: CT_ERR_INVALID_ARG for a bad cache length.
   out_dir must exist. Errors: CT_ERR_IO, CT_ERR_NOMEM. */
ct_status ct_export_step(const ct_model *m, const char *model_dir, const ct_export_step_opts *o,
                         const char *out_dir, ct_export_result *res, char *err, size_t errcap);

#define CT_EXPORT_MAX_PROGRAMS 16

/* Codec window export options. */
typedef struct {
    int context;                      /* left-context frames (72) */
    int n_ramp;                       /* distinct chunk sizes */
    int ramp[CT_EXPORT_MAX_PROGRAMS]; /* chunk frames per program (each >= 1) */
    int external;                     /* 1: force external data */
} ct_export_codec_opts;

/* Writes <out_dir>/code2wav_c<chunk>_ctx<context>.onnx for each distinct ramp size plus
   <out_dir>/manifest.json (export/codec_manifest.h: version, codec id, context, hop, sample
   rate, the ramp, programs with shapes, bytes and SHA-256).
   The graph: codes int64 [1, n_q, context+chunk] -> wav float [1, chunk*hop], equal to
   ct_codec_decode_window on the same frames. res[] (n_ramp entries, may be NULL) receives
   per-program results. Errors: CT_ERR_INVALID_ARG (bad sizes, before any work), codec load
   errors, CT_ERR_IO, CT_ERR_NOMEM. */
ct_status ct_export_codec(const char *model_dir, const ct_export_codec_opts *o, const char *out_dir,
                          ct_export_result *res, char *err, size_t errcap);

/* Counts from one sanitizer run. */
typedef struct {
    int nan_guards_removed;
    int allowzero_cleared;
    int scalar_axes_fixed;
    int value_infos_dropped;
    int external_tensors; /* tensors whose data moved into <out>.data */
} ct_sanitize_counts;

/* Reads the ONNX model in_path, applies the three rules of docs/EXPORT.md, Sanitizer (drop
   Where(IsNaN(x), a, b) guards where x is a branch; Reshape allowzero=1 -> 0; rank-0 axes
   initializers/Constants of Unsqueeze/Squeeze -> rank 1, stale value_info for them dropped)
   to the main graph and writes out_path (external data re-saved as one <out_path>.data blob).
   Malformed protobuf, truncated files, node cycles, unknown opset domains or missing external
   data: CT_ERR_FORMAT / CT_ERR_IO / CT_ERR_UNSUPPORTED with nothing written to out_path. */
ct_status ct_onnx_sanitize(const char *in_path, const char *out_path, ct_sanitize_counts *counts, char *err,
                           size_t errcap);

/* The sanitizer on an in-memory model (external data resolved against base_dir; NULL = none
   allowed). On success *out / *out_len hold the new model bytes (malloc'd; tensors that had
   external data are made inline). Used by ct_onnx_sanitize and the fuzzer. */
ct_status ct_onnx_sanitize_mem(const uint8_t *buf, size_t len, const char *base_dir, uint8_t **out,
                               size_t *out_len, ct_sanitize_counts *counts, char *err, size_t errcap);

#endif
