/* Deploy profiles: a fixed schema of engine settings (each key is a field of the model, engine or
   stream params: ct_profile_apply), each value tagged with the layer that set it; a strict YAML
   loader (libyaml events; unknown keys, duplicates and aliases are errors); the materialised
   YAML writer; and the `--profile auto` layer chain of docs/EDGE.md 4: builtin ->
   profiles/qwen3_tts.yaml -> profiles/hardware/<class>.yaml -> derived -> cost model (or
   calibration, where measured) -> calibrated schedule -> the user's file -> key=value sets. */
#ifndef CT_EDGE_PROFILE_H
#define CT_EDGE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "codectalk.h"
#include "edge/calibrate.h"
#include "edge/cost.h"
#include "edge/derive.h"
#include "edge/hw.h"
#include "edge/plan.h"

typedef enum {
    CT_PK_INT,   /* integer in [lo, hi] */
    CT_PK_U64,   /* non-negative byte count */
    CT_PK_BOOL,
    CT_PK_STR,   /* free text, or one of `choices` when set */
    CT_PK_CPUS,  /* CPU range string ("0-3,6"); "" = no binding */
    CT_PK_LIST   /* list of integers in [lo, hi], at most CT_PROFILE_MAX_LIST */
} ct_pkind;

/* Key indices, in schema (and output) order. Each key has one consumer (ct_profile_apply). */
typedef enum {
    CT_PK_DESCRIPTION = 0,
    CT_PK_ENGINE_MAX_STREAMS,      /* ct_engine_params.max_streams */
    CT_PK_ENGINE_QUEUE_DEPTH,      /* .queue_cap */
    CT_PK_ENGINE_PLACEMENT,        /* .placement */
    CT_PK_ENGINE_KV_BUDGET,        /* .kv_budget_bytes */
    CT_PK_ENGINE_THROTTLE_MARGIN,  /* .safety_margin_ms (-1: no throttle) */
    CT_PK_ENGINE_MAX_DEFER,        /* .max_defer_ms */
    CT_PK_ENGINE_WARMUP,           /* .warmup */
    CT_PK_ENGINE_FRAME_MS_FIXED,   /* .frame_ms_fixed (compute admission; cost model) */
    CT_PK_ENGINE_FRAME_MS_STREAM,  /* .frame_ms_per_stream */
    CT_PK_ENGINE_DEADLINE,         /* ct_stream_params.deadline_ms */
    CT_PK_ENGINE_FIRST_AUDIO,      /* ct_stream_params.first_audio_timeout_ms */
    CT_PK_ENGINE_PROMPT_CACHE,     /* ct_engine_params.prompt_cache_bytes */
    CT_PK_TALKER_WEIGHTS,          /* ct_model_params.talker_weights */
    CT_PK_TALKER_WEIGHT_PANELS,      /* ct_model_params.weight_panels */
    CT_PK_TALKER_THREADS,          /* ct_engine_params.talker_threads */
    CT_PK_TALKER_CPUS,             /* .talker_cpus */
    CT_PK_TALKER_MAX_CONTEXT,      /* .max_context */
    CT_PK_TALKER_PREFILL_CHUNK,    /* .prefill_chunk_tokens */
    CT_PK_PREDICTOR_WEIGHTS,       /* ct_model_params.predictor_weights */
    CT_PK_CODEC_THREADS,           /* ct_engine_params.codec_threads */
    CT_PK_CODEC_CPUS,              /* .codec_cpus */
    CT_PK_CODEC_WINDOWED,          /* ct_stream_params.windowed */
    CT_PK_CODEC_LEFT_CONTEXT,      /* ct_stream_params.context_frames */
    CT_PK_STREAM_POLICY,           /* ct_stream_params.schedule: the policy */
    CT_PK_STREAM_FIRST_CHUNK,      /*   fixed / adaptive first chunk */
    CT_PK_STREAM_RAMP,             /*   ramp entries */
    CT_PK_STREAM_CHUNK_FRAMES,     /*   ;steady= */
    CT_PK_STREAM_MIN_FRAMES,       /*   ;min= (adaptive) */
    CT_PK_STREAM_MARGIN_MS,        /*   ;margin= (adaptive) */
    CT_PK_STREAM_UTTERANCE_BYTES,  /* ct_stream_params.utterance_bytes */
    CT_PK_COUNT
} ct_pkey;

#define CT_PROFILE_MAX_LIST 16
#define CT_PROFILE_LAYER_LEN 64

typedef struct {
    const char *key;      /* dotted name, e.g. "talker.kv_budget_bytes" */
    ct_pkind kind;
    int64_t lo, hi;       /* INT / LIST element range */
    const char *choices;  /* STR: space-separated allowed values, NULL = any */
    const char *deflt;    /* builtin value as text */
    const char *seed;     /* the seed framework's knob it stands for ("-": none) */
    const char *help;
} ct_pkey_info;

typedef struct {
    int set;
    char layer[CT_PROFILE_LAYER_LEN]; /* which layer set it */
    int64_t i;                        /* INT, U64, BOOL */
    char s[256];                      /* STR, CPUS */
    int n;                            /* LIST length */
    int list[CT_PROFILE_MAX_LIST];    /* [n] */
} ct_pval;

typedef struct {
    ct_pval v[CT_PK_COUNT];
} ct_profile;

/* Schema entry for a key index (NULL when out of range). */
const ct_pkey_info *ct_profile_key(int idx);

/* Index of a dotted key, or -1. */
int ct_profile_find(const char *key);

/* Every key at its builtin value, layer "builtin". */
void ct_profile_defaults(ct_profile *p);

/* Sets key from text (lists as "2,4,8" or "[2, 4, 8]"). CT_ERR_FORMAT naming the key for an
   unknown key or a bad value; p is unchanged on error. */
ct_status ct_profile_set(ct_profile *p, const char *key, const char *value, const char *layer,
                         char *err, size_t errcap);

/* Typed setters for code layers (no validation beyond the type). */
void ct_profile_set_i(ct_profile *p, ct_pkey k, int64_t v, const char *layer);
void ct_profile_set_s(ct_profile *p, ct_pkey k, const char *s, const char *layer);
void ct_profile_set_list(ct_profile *p, ct_pkey k, const int *v, int n, const char *layer);

/* Applies a YAML document (mapping of sections to keys; see docs/EDGE.md) over p. Errors are
   CT_ERR_FORMAT "<what>:<line>: <problem> '<key>'" for syntax errors, unknown keys, duplicate
   keys, aliases, values of the wrong type; p may be partly updated on error. An empty
   document is fine. */
ct_status ct_profile_load_yaml(ct_profile *p, const char *text, size_t len, const char *what,
                               const char *layer, char *err, size_t errcap);

/* Same over a file (at most 1 MiB); CT_ERR_IO when it cannot be read. */
ct_status ct_profile_load_file(ct_profile *p, const char *path, const char *layer, char *err,
                               size_t errcap);

/* Cross-key checks (ramp ascending and ending at or below chunk_frames, min_frames <=
   chunk_frames). CT_ERR_FORMAT naming the keys. */
ct_status ct_profile_validate(const ct_profile *p, char *err, size_t errcap);

/* Materialised YAML (malloc'd, caller frees; NULL on OOM). `header` lines (may be NULL) are
   written as comments first. explain = 1 adds "# <layer> | <seed knob>" after every value.
   The output loads back with ct_profile_load_yaml to the same values. */
char *ct_profile_to_yaml(const ct_profile *p, int explain, const char *header);

/* Layer "derived": memory (KV budget, streams that fit), context, the adaptive controller's
   class defaults (docs/EDGE.md 2). */
void ct_profile_apply_derived(ct_profile *p, const ct_derived *d, const char *layer);

/* Layer "cost model" / "calibration": option o of the plan (formats, placement, threads, CPU
   sets from the usable CPUs in d, streams = min(memory, compute), the frame cost for
   admission). */
void ct_profile_apply_plan(ct_profile *p, const ct_plan *plan, int o, const ct_derived *d, const char *layer);

/* Layer "calibration": the chunk schedule measured for the chosen formats (adaptive with its
   min frames and margin, or the ramp). */
void ct_profile_apply_calibration(ct_profile *p, const ct_calibration *c, const char *layer);

typedef struct {
    const char *profiles_dir; /* NULL: $CODECTALK_PROFILE_DIR, else the source tree's profiles/ */
    const char *model_dir;    /* NULL: weights unknown, 8 KiB/token KV fallback, no cost model */
    const char *probe_root;   /* NULL: CODECTALK_HW_PROFILE or the live probe */
    const ct_hw_profile *hw;  /* non-NULL: use this instead of probing */
    const char *cache_dir;    /* NULL: $XDG_CACHE_HOME/codectalk or ~/.cache/codectalk */
    const char *user_file;    /* NULL: none */
    const char *const *sets;  /* [n_sets] "key=value" */
    int n_sets;
    int max_cpus;             /* 0: no limit */
    int no_calibration;       /* 1: skip the calibration cache */
    int no_measure;           /* 1: the cost model uses the probe's estimate, no roofline run */
    double target_rtf;        /* 0: 0.85 */
    double codec_macs;        /* codec multiply-adds per frame; 0: the codec in model_dir is
                                 loaded to count them (none there: the codec is not priced) */
    const ct_machine *machine;/* non-NULL: these rates instead of the cache / roofline */
} ct_auto_opts;

typedef struct {
    ct_hw_profile hw;
    ct_derived derived;
    char model_id[96];
    char fingerprint[17];
    char base_path[1024];
    char hw_overlay_path[1024];
    int hw_overlay_found;
    int have_plan;            /* 0 without a model dir */
    ct_machine machine;
    ct_model_shape shape;
    ct_plan plan;
    char cache_path[CT_PLAN_OPTIONS][1024];      /* calibration file per format combination */
    int have_calibration[CT_PLAN_OPTIONS];
    ct_calibration cal[CT_PLAN_OPTIONS];
    char warnings[2048];      /* "; "-separated: corrupt or foreign caches, missing base, cost-model
                                 fallbacks (probe notes: hw.notes) */
} ct_auto_report;

/* Runs the whole chain into p and fills r (both caller-owned; r is large, heap it). Errors:
   a malformed base/overlay/user YAML or override JSON, an unreadable model dir, a bad flag. */
ct_status ct_profile_auto(const ct_auto_opts *o, ct_profile *p, ct_auto_report *r, char *err,
                          size_t errcap);

/* `--profile auto|none|FILE` for engine entry points: "auto" runs ct_profile_auto with o (may
   be NULL; r may be NULL); "none" is the builtin values (the engine's plain defaults); anything
   else is a file loaded over the builtin values, then o's sets. Then validates. */
ct_status ct_profile_resolve(const char *spec, const ct_auto_opts *o, ct_profile *p, ct_auto_report *r,
                             char *err, size_t errcap);

/* Where a profile's values go: buffers that must outlive the params that point into them. */
typedef struct {
    int talker_cpus[CT_HW_MAX_CPUS], n_talker_cpus;
    int codec_cpus[CT_HW_MAX_CPUS], n_codec_cpus;
    char schedule[192];
    char talker_weights[8], predictor_weights[8];
} ct_profile_bufs;

/* Writes every key into the params it stands for (any of mp, ep, sp may be NULL: their keys are
   skipped); b holds the CPU lists, schedule and format strings they point to. CT_ERR_FORMAT
   naming the key for a value the params cannot take. */
ct_status ct_profile_apply(const ct_profile *p, ct_model_params *mp, ct_engine_params *ep, ct_stream_params *sp,
                           ct_profile_bufs *b, char *err, size_t errcap);

/* Model id used in fingerprints: "qwen3-tts-12hz-<size>-<kind>" from dir/config.json, else
   the directory's base name; "qwen3-tts" when dir is NULL. */
void ct_model_id(const char *dir, char *out, size_t cap);

#endif
