/* Hardware profile record (what the probe found), ISA flag names, hardware class, and the
   JSON form used by `codectalk probe --json` and the CODECTALK_HW_PROFILE override. */
#ifndef CT_EDGE_HW_H
#define CT_EDGE_HW_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define CT_HW_MAX_CPUS 256
#define CT_HW_MAX_CLUSTERS 8
#define CT_HW_NOTES_LEN 1024

/* Normalised ISA flags (docs/EDGE.md 1, record defaults and flags). Bit i = 1u << i. */
typedef enum {
    CT_HWF_AVX2 = 0,
    CT_HWF_FMA,
    CT_HWF_F16C,
    CT_HWF_AVX512,      /* avx512f */
    CT_HWF_AVX512BW,
    CT_HWF_AVX512VL,
    CT_HWF_AVX512_BF16,
    CT_HWF_AVX512_VNNI,
    CT_HWF_AMX_BF16,
    CT_HWF_AMX_TILE,
    CT_HWF_AMX_INT8,
    CT_HWF_NEON,        /* asimd */
    CT_HWF_FP16_ARITH,  /* asimdhp */
    CT_HWF_DOTPROD,     /* asimddp */
    CT_HWF_I8MM,
    CT_HWF_BF16,
    CT_HWF_SVE,
    CT_HWF_SVE2,
    CT_HWF_SME,
    CT_HWF_COUNT
} ct_hw_flag;

#define CT_HWF_BIT(f) (1u << (unsigned)(f))

/* One group of CPUs sharing a cpufreq maximum. */
typedef struct {
    uint32_t max_khz;
    int n_cpus;
    int cpus[CT_HW_MAX_CPUS]; /* [n_cpus], ascending logical CPU ids */
} ct_hw_cluster;

/* The hardware record (docs/EDGE.md 1). Plain value type: copy freely. */
typedef struct {
    char arch[16];          /* "x86_64" | "aarch64" | "unknown" */
    char cpu_model[128];
    uint32_t flags;         /* CT_HWF_BIT mask */
    int n_logical;
    int n_physical;
    int n_clusters;
    ct_hw_cluster clusters[CT_HW_MAX_CLUSTERS]; /* [n_clusters], big (fastest) first */
    int numa_nodes;         /* >= 1 */
    uint64_t ram_total_bytes;
    uint64_t ram_available_bytes;
    /* container limits (docs/EDGE.md 1, containers); 0 means "no limit" throughout */
    int n_allowed_cpus;     /* CPUs this process may run on (affinity mask); 0 = all CPUs */
    int allowed_cpus[CT_HW_MAX_CPUS]; /* [n_allowed_cpus], ascending logical CPU ids */
    double cgroup_cpus;     /* cgroup CPU quota in CPUs (quota / period), 0 = no limit */
    uint64_t cgroup_mem_limit_bytes; /* cgroup memory limit, 0 = no limit */
    uint64_t cgroup_mem_used_bytes;  /* cgroup usage less inactive file cache, 0 = not read */
    char accelerator[32];   /* "none" | "cuda_discrete" | "cuda_unified" | "npu:<vendor>" */
    char gpu_name[128];
    uint64_t gpu_mem_bytes;
    int gpu_sm_count;
    int gpu_capability[2];  /* major, minor */
    int gpu_integrated;     /* CUDA integrated / unified memory */
    int supports_bf16;
    int supports_fp16;
    int thermal_zones;
    char host_os[8];        /* "linux" | "wsl2" */
    char source[160];       /* "probe:<root>" | "override:<path>" | "override:inline" */
    char notes[CT_HW_NOTES_LEN]; /* what could not be read, "; "-separated; "" when all fine */
} ct_hw_profile;

typedef enum {
    CT_HW_NPU_PHONE = 0,
    CT_HW_JETSON,
    CT_HW_CUDA_DISCRETE,
    CT_HW_ARM64_CPU,
    CT_HW_X86_CPU,
    CT_HW_CLASS_COUNT
} ct_hw_class;

/* Fills the record defaults (docs/EDGE.md 1): arch "unknown", numa 1, accelerator "none",
   fp16 true, host "linux", the rest 0. */
void ct_hw_profile_init(ct_hw_profile *p);

/* Stored name of a flag ("avx512", "neon", ...). */
const char *ct_hw_flag_name(ct_hw_flag f);

/* Maps one raw /proc/cpuinfo token (x86 `flags` or ARM `Features`) to its normalised flag.
   Returns -1 for tokens that are not kept. Also accepts the stored names. */
int ct_hw_flag_from_token(const char *tok, size_t len);

/* 1 if every flag in mask is set in p. */
int ct_hw_has(const ct_hw_profile *p, uint32_t mask);

/* Arch inferred from flags for snapshot roots (docs/EDGE.md 1): ARM flags -> "aarch64",
   x86 flags -> "x86_64", else "unknown". Returns a static string. */
const char *ct_hw_arch_from_flags(uint32_t flags);

/* Hardware class (docs/EDGE.md 1): first match of npu_phone, jetson, cuda_discrete, arm64_cpu,
   x86_cpu. Says what the machine is, accelerator included. */
ct_hw_class ct_hw_classify(const ct_hw_profile *p);

/* The class whose settings this engine derives (docs/EDGE.md 1, engine class): this build has
   CPU kernels only (no GPU or NPU backend), so it is arm64_cpu for arch "aarch64" (Jetson and
   phone hosts included) and x86_cpu otherwise, whatever accelerator the record reports. */
ct_hw_class ct_hw_engine_class(const ct_hw_profile *p);

/* "npu_phone", "jetson", "cuda_discrete", "arm64_cpu", "x86_cpu". */
const char *ct_hw_class_name(ct_hw_class c);

/* Parses a class name; returns -1 if unknown. */
int ct_hw_class_from_name(const char *name);

/* big_cpus: the CPUs of cluster 0 (0..n_logical-1 without cluster info) that the affinity mask
   allows; the allowed CPUs when none of those is allowed; at most ceil(cgroup_cpus) of them
   when a CPU quota is set. Writes at most cap ids into out (ascending within the cluster) and
   returns the count. */
int ct_hw_big_cpus(const ct_hw_profile *p, int *out, int cap);

/* RAM this process can count on: available RAM (total when available is unknown), capped by
   the cgroup memory limit less its current usage (the limit itself when usage was not read).
   0 when nothing is known or the cgroup is already at its limit. */
uint64_t ct_hw_usable_ram(const ct_hw_profile *p);

/* Appends "; "-separated text to p->notes (truncates silently). */
void ct_hw_note(ct_hw_profile *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Serialises p as a JSON object (the keys of docs/EDGE.md 1, JSON form, plus "hardware_class",
   "engine_class" and "notes"). Returns a malloc'd NUL-terminated string (caller frees) or NULL
   on allocation failure. */
char *ct_hw_to_json(const ct_hw_profile *p, int pretty);

/* Parses the JSON form. Unknown keys are ignored (so written records read back); a key of the
   wrong type or out of range fails with CT_ERR_FORMAT naming `what`, line and key; bad JSON
   syntax names line and column. `what` is the file name or "inline" (for the message).
   Fields absent from the JSON keep their defaults; source becomes "override:<what>". */
ct_status ct_hw_from_json(const char *text, size_t len, const char *what, ct_hw_profile *out,
                          char *err, size_t errcap);

/* CODECTALK_HW_PROFILE: if `value` (after leading blanks) starts with '{' it is inline JSON,
   else a path to a JSON file (at most 1 MiB). Errors as ct_hw_from_json, CT_ERR_IO when the
   file cannot be read. */
ct_status ct_hw_load_override(const char *value, ct_hw_profile *out, char *err, size_t errcap);

#endif
