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
    int max_streams;              /* cap on streams */
    int max_context;              /* talker positions per stream */
    uint64_t headroom_bytes;      /* OS headroom */
    int chunk_min_frames;         /* adaptive floor before calibration */
    int chunk_margin_ms;          /* adaptive margin before calibration */
} ct_class_consts;

/* Constants for a class (never NULL for a valid class). */
const ct_class_consts *ct_class_table(ct_hw_class c);

/* Talker KV geometry; all zero = unknown. */
typedef struct {
    int layers, kv_heads, head_dim;
} ct_kv_geometry;

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


/* Inputs beyond the hardware profile. */
typedef struct {
    uint64_t weights_bytes;  /* 0 = unknown */
    ct_kv_geometry kv;       /* zero = unknown (8 KiB/token fallback) */
    int max_cpus;            /* 0 = no limit on the CPU list */
} ct_derive_in;

/* What the machine and the model allow, before the cost model (docs/EDGE.md 2). */
typedef struct {
    ct_hw_class cls;               /* the engine class (ct_hw_engine_class) */
    uint64_t pool_bytes;           /* usable RAM (ct_hw_usable_ram: cgroup limit honoured) */
    uint64_t weights_bytes;
    uint64_t activation_bytes;     /* max(0.15 weights, 512 MiB) */
    uint64_t headroom_bytes;
    uint64_t budget_bytes;         /* pool - weights - activations - headroom, >= 0 */
    uint64_t kv_bytes_per_token;   /* f32 KV (the engine's), exact from geometry, else 8 KiB */
    int max_context;
    uint64_t per_seq_bytes;        /* one stream's worst-case KV */
    int max_streams_mem;           /* min(class cap, budget / per_seq), at least 1 */
    uint64_t kv_budget_bytes;      /* max_streams_mem * per_seq */
    int n_cpus;
    int cpus[CT_HW_MAX_CPUS];      /* [n_cpus] usable CPUs: big cluster, affinity, quota, max_cpus */
    int chunk_min_frames, chunk_margin_ms;
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
