/* Derived deploy overrides (docs/EDGE.md 2): per-class constants, dtype, memory pool, KV budget,
   no-preemption KV admission, CPU ranges per stage, chunk parameters, timeouts. Pure functions
   over a hardware profile and a few model numbers. */
#ifndef CT_EDGE_DERIVE_H
#define CT_EDGE_DERIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "edge/hw.h"

#define CT_GIB (1024ull * 1024ull * 1024ull)
#define CT_MIB (1024ull * 1024ull)

/* Per-class constants: one row of the class table (docs/EDGE.md 2; values in derive.c). */
typedef struct {
    int max_num_seqs;
    int max_len0, max_len1;       /* stage 0 (talker) tokens / stage 1 (codec) tokens */
    uint64_t headroom_bytes;      /* OS headroom */
    double kv_share0;             /* talker share of the KV budget */
    int chunk_min_frames;
    int chunk_margin_ms;
    int eager0, eager1;
    uint64_t small_vram_bytes;    /* threshold; 0 = never small */
    double read_gbps;             /* model load bandwidth, 1e9 bytes/s */
} ct_class_consts;

/* Constants for a class (never NULL for a valid class). */
const ct_class_consts *ct_class_table(ct_hw_class c);

/* Talker KV geometry; all zero = unknown. */
typedef struct {
    int layers, kv_heads, head_dim;
} ct_kv_geometry;

/* Bytes per element for a dtype name: f32/float32 4; f16/float16/bf16/bfloat16/auto 2;
   fp8/float8_e4m3fn 1; anything else 2 (docs/EDGE.md 2, KV admission). */
int ct_dtype_bytes_by_name(const char *dtype);

/* 2 * layers * kv_heads * head_dim * dtype_bytes; 0 when the geometry is unknown. */
uint64_t ct_kv_bytes_per_token(const ct_kv_geometry *g, int dtype_bytes);

/* n * ceil(max_len / 16) * 16 * bytes_per_token. */
uint64_t ct_kv_bytes_for_seqs(int n, int max_len, uint64_t bytes_per_token);

/* floor(kv_bytes / bytes for one sequence); 0 when a sequence needs 0 bytes. */
int ct_kv_max_seqs(uint64_t kv_bytes, int max_len, uint64_t bytes_per_token);

/* 1 if max_num_seqs sequences of max_len tokens always fit without preemption. */
int ct_kv_admission_ok(uint64_t kv_bytes, int max_len, uint64_t bytes_per_token, int max_num_seqs);

/* Renders CPU ids as a compact range string ("0-2,5,7-8"); consecutive ascending runs become
   a-b. Writes "" for n == 0. Returns buf. */
char *ct_cpu_range_str(const int *cpus, int n, char *buf, size_t cap);

/* Parses a range string back ("0-3,6"); CT_ERR_FORMAT on garbage or ids >= 256. */
ct_status ct_cpu_range_parse(const char *s, int *cpus, int cap, int *n, char *err, size_t errcap);

/* Splits the CPU list into stage 0 (first n0 = max(1, round(2/3 len)), capped at len-1 when
   len > 1) and stage 1 (the rest, or the last CPU again when len == 1). */
void ct_split_cpus(const int *cpus, int n, char *s0, size_t cap0, char *s1, size_t cap1);

/* Inputs beyond the hardware profile. */
typedef struct {
    uint64_t weights_bytes;  /* 0 = unknown */
    ct_kv_geometry kv;       /* zero = unknown (8 KiB/token fallback) */
    int max_cpus;            /* 0 = no limit on the big-CPU list */
} ct_derive_in;

/* The derived overrides (docs/EDGE.md 2 maps each to a profile key); stage 0 = talker (+ code
   predictor), 1 = codec. */
typedef struct {
    ct_hw_class cls;
    char dtype[16];                /* "bf16" | "f16" | "f32" (the dtype rule of docs/EDGE.md 2) */
    int is_cuda;
    uint64_t pool_bytes;           /* memory pool the budget comes from */
    uint64_t weights_bytes;
    uint64_t activation_bytes;     /* max(0.15 weights, 512 MiB) */
    uint64_t headroom_bytes;
    uint64_t budget_bytes;         /* B = memory_budget_bytes */
    uint64_t kv0_bytes, kv1_bytes; /* floor(0.7 B), B - kv0 */
    uint64_t kv_bytes_per_token;   /* exact from geometry, else 8 KiB */
    uint64_t per_seq_bytes;
    int max_num_seqs;              /* both stages */
    int max_len0, max_len1;
    int small_vram;
    int eager0, eager1;
    int n_capture;
    int capture_sizes[3];          /* [n_capture], sorted {1, 2, max_num_seqs}; CUDA, !eager0 */
    int cpu_bind;                  /* 1 when cpus0/cpus1 are set (non-CUDA) */
    char cpus0[256], cpus1[256];
    int chunk_adaptive;            /* always 1 */
    int chunk_min_frames;
    int chunk_margin_ms;
    int decode_batch_max_size;     /* 1 */
    int async_chunk;               /* 1: the seed's "codec overlaps the talker"; not applied to
                                      the profile: engine.placement auto already overlaps the
                                      stages wherever that pays (more than 2 CPUs) */
    double load_s;
    int compile_s;
    int stage_init_timeout_s, init_timeout_s;
    char notes[2][192];
} ct_derived;

/* Derives the overrides for hw with the inputs in `in` (the rules of docs/EDGE.md 2). Total
   function. */
void ct_derive(const ct_hw_profile *hw, const ct_derive_in *in, ct_derived *out);

/* Sum of tensor bytes of every *.safetensors below dir (up to 3 levels deep). CT_ERR_IO when
   dir cannot be listed, CT_ERR_FORMAT naming the file when one does not parse. */
ct_status ct_model_weights_bytes(const char *dir, uint64_t *out, char *err, size_t errcap);

/* Talker geometry from dir/config.json (src/model/config.h). */
ct_status ct_model_kv_geometry(const char *dir, ct_kv_geometry *out, char *err, size_t errcap);

#endif
