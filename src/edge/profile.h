/* Deploy profiles: a fixed schema of engine settings, each value tagged with the layer that set
   it; a strict YAML loader (libyaml events; unknown keys, duplicates and aliases are errors);
   the materialised YAML writer; and the `--profile auto` layer chain of docs/EDGE.md 4:
   builtin -> profiles/qwen3_tts.yaml -> profiles/hardware/<class>.yaml -> derived overrides ->
   cached calibration -> the user's file -> key=value flags. */
#ifndef CT_EDGE_PROFILE_H
#define CT_EDGE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "edge/calibrate.h"
#include "edge/derive.h"
#include "edge/hw.h"

typedef enum {
    CT_PK_INT,   /* integer in [lo, hi] */
    CT_PK_U64,   /* non-negative byte count */
    CT_PK_BOOL,
    CT_PK_STR,   /* free text, or one of `choices` when set */
    CT_PK_CPUS,  /* CPU range string ("0-3,6"); "" = no binding */
    CT_PK_LIST   /* list of integers in [lo, hi], at most CT_PROFILE_MAX_LIST */
} ct_pkind;

/* Key indices, in schema (and output) order. */
typedef enum {
    CT_PK_DESCRIPTION = 0,
    CT_PK_ENGINE_MAX_STREAMS,
    CT_PK_ENGINE_PARALLEL_INIT,
    CT_PK_ENGINE_STAGE_INIT_TIMEOUT,
    CT_PK_ENGINE_INIT_TIMEOUT,
    CT_PK_ENGINE_PLACEMENT,
    CT_PK_TALKER_DEVICE,
    CT_PK_TALKER_DTYPE,
    CT_PK_TALKER_CPUS,
    CT_PK_TALKER_MAX_CONTEXT,
    CT_PK_TALKER_KV_BUDGET,
    CT_PK_TALKER_PREFILL_CHUNK,
    CT_PK_TALKER_EAGER,
    CT_PK_TALKER_WARMUP,
    CT_PK_CODEC_DEVICE,
    CT_PK_CODEC_DTYPE,
    CT_PK_CODEC_CPUS,
    CT_PK_CODEC_MAX_TOKENS,
    CT_PK_CODEC_MEMORY_BUDGET,
    CT_PK_CODEC_EAGER,
    CT_PK_STREAM_ENABLED,
    CT_PK_STREAM_CHUNK_FRAMES,
    CT_PK_STREAM_LEFT_CONTEXT,
    CT_PK_STREAM_RAMP,
    CT_PK_STREAM_ADAPTIVE,
    CT_PK_STREAM_MIN_FRAMES,
    CT_PK_STREAM_MARGIN_MS,
    CT_PK_STREAM_DECODE_BATCH,
    CT_PK_STREAM_FIRST_WAIT_MS,
    CT_PK_STREAM_CHUNK_WAIT_MS,
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
    const char *vllm;     /* the vLLM-Omni knob it stands for */
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
   written as comments first. explain = 1 adds "# <layer> | <vLLM knob>" after every value.
   The output loads back with ct_profile_load_yaml to the same values. */
char *ct_profile_to_yaml(const ct_profile *p, int explain, const char *header);

/* Layer 3: derived overrides in engine terms (see docs/EDGE.md for the mapping). */
void ct_profile_apply_derived(ct_profile *p, const ct_derived *d, const char *layer);

/* Layer 4: ramp, min frames, margin; adaptive only switched on, never off (docs/EDGE.md 3). */
void ct_profile_apply_calibration(ct_profile *p, const ct_calibration *c, const char *layer);

typedef struct {
    const char *profiles_dir; /* NULL: $CODECTALK_PROFILE_DIR, else the source tree's profiles/ */
    const char *model_dir;    /* NULL: weights unknown, 8 KiB/token KV fallback */
    const char *probe_root;   /* NULL: CODECTALK_HW_PROFILE or the live probe */
    const ct_hw_profile *hw;  /* non-NULL: use this instead of probing */
    const char *cache_dir;    /* NULL: $XDG_CACHE_HOME/codectalk or ~/.cache/codectalk */
    const char *user_file;    /* NULL: none */
    const char *const *sets;  /* [n_sets] "key=value" */
    int n_sets;
    int max_cpus;             /* 0: no limit */
    int no_calibration;       /* 1: skip the cache layer */
} ct_auto_opts;

typedef struct {
    ct_hw_profile hw;
    ct_derived derived;
    char model_id[96];
    char fingerprint[17];
    char base_path[1024];
    char hw_overlay_path[1024];
    int hw_overlay_found;
    char cache_path[1024];
    int have_calibration;
    ct_calibration cal;
    char warnings[1024];      /* "; "-separated: corrupt cache, missing base (probe notes: hw.notes) */
} ct_auto_report;

/* Runs the whole chain into p and fills r (both caller-owned; r is large, heap it). Errors:
   a malformed base/overlay/user YAML or override JSON, an unreadable model dir, a bad flag. */
ct_status ct_profile_auto(const ct_auto_opts *o, ct_profile *p, ct_auto_report *r, char *err,
                          size_t errcap);

/* `--profile auto|FILE` for engine entry points: "auto" runs ct_profile_auto with o (may be
   NULL); anything else is a file loaded over the builtin values. Then validates. */
ct_status ct_profile_resolve(const char *spec, const ct_auto_opts *o, ct_profile *p, char *err,
                             size_t errcap);

/* Model id used in fingerprints: "qwen3-tts-12hz-<size>-<kind>" from dir/config.json, else
   the directory's base name; "qwen3-tts" when dir is NULL. */
void ct_model_id(const char *dir, char *out, size_t cap);

#endif
