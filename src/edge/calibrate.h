/* Chunk calibration (docs/EDGE.md 3): hardware fingerprint, codec-frame rate from a recorded chunk
   timeline, the chunk schedule derived from it, and the on-disk calibration cache. */
#ifndef CT_EDGE_CALIBRATE_H
#define CT_EDGE_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "edge/hw.h"
#include "stream/chunk.h" /* ct_chunk_rec */

#define CT_CAL_STEADY 25       /* steady chunk, frames */
#define CT_CAL_FRAME_MS 80.0   /* one codec frame */
#define CT_CAL_JITTER_MS 40.0
#define CT_CAL_MAX_RAMP 16

#define CT_CAL_MAX_RUNS 8
#define CT_CAL_SCHEMA 3

/* One measured placement: per-stage busy ms per frame of a single stream (stream info),
   the frame period it achieved (wall ms per frame after the first audio), the prompt cost. */
typedef struct {
    int serial, talker_threads, codec_threads;
    double talker_ms, predictor_ms, codec_ms, frame_ms, prefill_ms_per_token;
} ct_cal_run;

typedef struct {
    char model_id[96];
    char engine_version[24];   /* ct_version() of the engine that measured */
    char kernels[96];          /* ct_kernels_id() of the kernels it measured with */
    char talker_weights[8], predictor_weights[8]; /* the format combination measured */
    int n_runs;
    ct_cal_run runs[CT_CAL_MAX_RUNS]; /* [n_runs] placements measured */
    int measured;
    double rate_frames_per_s;
    double rtf;
    double ttfa_ms;          /* first audio chunk arrival; < 0 when unknown */
    int adaptive;
    int min_frames;
    double margin_ms;
    int n_ramp;
    int ramp[CT_CAL_MAX_RAMP]; /* [n_ramp] frames per chunk, last = steady */
} ct_calibration;

/* SHA-1 of data into out[20]. */
void ct_sha1(const void *data, size_t len, uint8_t out[20]);

/* Fingerprint (docs/EDGE.md 3): first 16 hex chars of sha1 over the key-sorted JSON object
   {class, cpu, flags (sorted), gpu, gpu_mem (bytes / 256 MiB), cores (n_physical), model},
   written with ", " and ": " separators and ASCII escapes. out must hold 17 bytes.
   CT_ERR_NOMEM on failure. */
ct_status ct_hw_fingerprint(const ct_hw_profile *hw, const char *model_id, char out[17],
                            char *err, size_t errcap);

/* Rate (docs/EDGE.md 3): frames / wall seconds over chunks with samples > 0 (first chunk's
   samples not counted). Returns 0 when fewer than 2 audio chunks or no elapsed time. */
double ct_cal_rate(const ct_chunk_rec *chunks, int n, int sample_rate);

/* Chunk schedule (docs/EDGE.md 3) from a rate (r <= 0 = not measurable: the fixed fallback).
   ttfa_ms is copied. */
void ct_cal_schedule(double rate, double ttfa_ms, ct_calibration *out);

/* Rate + schedule from a timeline; ttfa = first chunk with samples > 0. */
void ct_cal_from_timeline(const ct_chunk_rec *chunks, int n, int sample_rate, ct_calibration *out);

/* Parses a recorded timeline: {"sample_rate": 24000, "chunks": [{"t_ms":..,"samples":..},..]}
   or a bare list of chunk objects (24 kHz). *chunks is malloc'd (caller frees). CT_ERR_FORMAT
   naming `what`, line/column or the key. */
ct_status ct_cal_parse_timeline(const char *text, size_t len, const char *what,
                                ct_chunk_rec **chunks, int *n, int *sample_rate, char *err,
                                size_t errcap);

/* The cache root: cache_dir, else $XDG_CACHE_HOME/codectalk, else ~/.cache/codectalk.
   CT_ERR_LIMIT if it does not fit, CT_ERR_STATE without HOME. */
ct_status ct_cache_root(const char *cache_dir, char *out, size_t cap, char *err, size_t errcap);

/* Cache file path: <root>/calibration/<fingerprint>-<talker>-<predictor>.json (one file per
   weight-format combination). */
ct_status ct_cal_cache_path(const char *cache_dir, const char *fingerprint, const char *talker_weights,
                            const char *predictor_weights, char *out, size_t cap, char *err, size_t errcap);

/* Serialises cal as the cache JSON, schema 2 (malloc'd string, caller frees; NULL on OOM). */
char *ct_cal_to_json(const ct_calibration *cal, const char *fingerprint, const char *model_id);

/* Parses the cache JSON; CT_ERR_FORMAT with the key on any missing or invalid field. */
ct_status ct_cal_from_json(const char *text, size_t len, ct_calibration *out, char *err,
                           size_t errcap);

/* Writes cal to path atomically (path.tmp.<pid> + rename), creating parent directories. */
ct_status ct_cal_save(const char *path, const ct_calibration *cal, const char *fingerprint,
                      const char *model_id, char *err, size_t errcap);

/* Loads path. *found = 1 when a valid entry was read for this model, formats, engine version
   and kernel selection (model_id / engine_version / kernels NULL: not checked). A missing file
   gives CT_OK, found 0, warn "". A corrupt file, or one from another model, format, engine
   version or kernel selection, gives CT_OK, found 0 and a note naming the file and the reason
   in warn[wcap]. */
ct_status ct_cal_load(const char *path, const char *model_id, const char *engine_version, const char *kernels,
                      ct_calibration *out, int *found, char *warn, size_t wcap);

/* The fastest measured run (lowest frame_ms), or NULL when none. */
const ct_cal_run *ct_cal_best_run(const ct_calibration *c);

#endif
