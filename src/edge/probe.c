/* Hardware probe over a filesystem root: cpuinfo (model, ISA flags, CPU count), sysfs topology
   (physical cores, cpufreq clusters, NUMA nodes), meminfo, thermal zones, Tegra markers, WSL2,
   NVIDIA driver entries, the CPU affinity mask and cgroup CPU/memory limits; on the live root
   also sched_getaffinity, cpuid/HWCAP and the CUDA driver API through dlopen. */
#define _GNU_SOURCE
#include "edge/probe.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/fileio.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define CT_PROBE_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define CT_PROBE_ARM64 1
#endif

#define MAX_PATH 1024

/* root + rel into buf; returns buf ("" when it would not fit). */
static const char *rpath(char *buf, size_t cap, const char *root, const char *rel) {
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    int n = (rl == 1 && root[0] == '/') ? snprintf(buf, cap, "/%s", rel)
                                        : snprintf(buf, cap, "%.*s/%s", (int)rl, root, rel);
    if (n < 0 || (size_t)n >= cap) buf[0] = 0;
    return buf;
}

/* Reads root/rel up to max bytes until EOF (procfs and sysfs report size 0, so the size is
   not trusted). NUL-terminated malloc'd buffer, or NULL when missing or larger than max. */
static char *read_rel(const char *root, const char *rel, size_t max, size_t *len) {
    char p[MAX_PATH];
    rpath(p, sizeof p, root, rel);
    FILE *f = p[0] ? fopen(p, "rb") : NULL;
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = cap > max ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > max) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

/* Reads a small file holding one unsigned integer; -1 if missing or garbled. */
static long long read_num(const char *root, const char *rel) {
    char *b = read_rel(root, rel, 256, NULL);
    if (!b) return -1;
    char *s = b, *end = NULL;
    while (*s == ' ' || *s == '\t') s++;
    long long v = -1;
    if (isdigit((unsigned char)*s)) {
        v = strtoll(s, &end, 10);
        while (end && (*end == '\n' || *end == ' ' || *end == '\r')) end++;
        if (!end || *end || v < 0) v = -1;
    }
    free(b);
    return v;
}

/* Lists entries of root/rel named <prefix><digits>; writes the numbers (ascending) into ids. */
static int list_numbered(const char *root, const char *rel, const char *prefix, int *ids, int cap) {
    char p[MAX_PATH];
    rpath(p, sizeof p, root, rel);
    DIR *d = p[0] ? opendir(p) : NULL;
    if (!d) return -1;
    size_t pl = strlen(prefix);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        if (strncmp(nm, prefix, pl) != 0 || !nm[pl]) continue;
        const char *q = nm + pl;
        int ok = 1;
        long v = 0;
        for (; *q; q++) {
            if (!isdigit((unsigned char)*q) || v > 100000) {
                ok = 0;
                break;
            }
            v = v * 10 + (*q - '0');
        }
        if (ok && n < cap) ids[n++] = (int)v;
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

/* ---- /proc/cpuinfo ---------------------------------------------------------------------- */

static void trim(const char **s, const char **e) {
    while (*s < *e && isspace((unsigned char)**s)) (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1])) (*e)--;
}

static uint32_t parse_flags(const char *s, const char *e) {
    uint32_t m = 0;
    while (s < e) {
        while (s < e && isspace((unsigned char)*s)) s++;
        const char *t = s;
        while (s < e && !isspace((unsigned char)*s)) s++;
        if (s > t) {
            int f = ct_hw_flag_from_token(t, (size_t)(s - t));
            if (f >= 0) m |= CT_HWF_BIT(f);
        }
    }
    return m;
}

static void probe_cpuinfo(const char *root, ct_hw_profile *p, int *have_flags) {
    *have_flags = 0;
    size_t blen = 0;
    char *b = read_rel(root, "proc/cpuinfo", 8u << 20, &blen);
    if (!b) {
        ct_hw_note(p, "cannot read /proc/cpuinfo");
        return;
    }
    for (size_t i = 0; i < blen; i++)
        if (b[i] == 0) b[i] = ' '; /* a garbled file must not end the text early */
    static const char *const MODEL_KEYS[] = {"model name", "Hardware", "cpu model", "Model"};
    int model_rank = 99;
    for (char *line = b; *line;) {
        char *nl = strchr(line, '\n');
        char *end = nl ? nl : line + strlen(line);
        char *colon = memchr(line, ':', (size_t)(end - line));
        if (colon) {
            const char *ks = line, *ke = colon, *vs = colon + 1, *ve = end;
            trim(&ks, &ke);
            trim(&vs, &ve);
            size_t kl = (size_t)(ke - ks);
            if (kl == 9 && memcmp(ks, "processor", 9) == 0) p->n_logical++;
            if (!*have_flags && ((kl == 5 && memcmp(ks, "flags", 5) == 0) ||
                                 (kl == 8 && memcmp(ks, "Features", 8) == 0))) {
                p->flags = parse_flags(vs, ve);
                *have_flags = 1;
            }
            for (int r = 0; r < 4 && r < model_rank; r++)
                if (strlen(MODEL_KEYS[r]) == kl && memcmp(ks, MODEL_KEYS[r], kl) == 0 && ve > vs) {
                    snprintf(p->cpu_model, sizeof p->cpu_model, "%.*s", (int)(ve - vs), vs);
                    model_rank = r;
                }
        }
        line = nl ? nl + 1 : end;
    }
    free(b);
    if (!*have_flags) ct_hw_note(p, "/proc/cpuinfo has no flags/Features line");
    if (p->n_logical == 0) ct_hw_note(p, "/proc/cpuinfo has no processor lines");
}

/* ---- cpuid / HWCAP (live root only) ---------------------------------------------------- */

#ifdef CT_PROBE_X86
static uint32_t cpuid_flags(void) {
    unsigned a, b, c, d;
    uint32_t m = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1;
    unsigned long long xcr0 = 0;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    int avx_os = (xcr0 & 0x6) == 0x6, avx512_os = (xcr0 & 0xe6) == 0xe6,
        amx_os = (xcr0 & 0x60000) == 0x60000;
    if (avx_os && ((c >> 12) & 1)) m |= CT_HWF_BIT(CT_HWF_FMA);
    if (avx_os && ((c >> 29) & 1)) m |= CT_HWF_BIT(CT_HWF_F16C);
    if (__get_cpuid_max(0, NULL) < 7) return m;
    __cpuid_count(7, 0, a, b, c, d);
    if (avx_os && ((b >> 5) & 1)) m |= CT_HWF_BIT(CT_HWF_AVX2);
    if (avx512_os) {
        if ((b >> 16) & 1) m |= CT_HWF_BIT(CT_HWF_AVX512);
        if ((b >> 30) & 1) m |= CT_HWF_BIT(CT_HWF_AVX512BW);
        if ((b >> 31) & 1) m |= CT_HWF_BIT(CT_HWF_AVX512VL);
        if ((c >> 11) & 1) m |= CT_HWF_BIT(CT_HWF_AVX512_VNNI);
    }
    if (amx_os) {
        if ((d >> 22) & 1) m |= CT_HWF_BIT(CT_HWF_AMX_BF16);
        if ((d >> 24) & 1) m |= CT_HWF_BIT(CT_HWF_AMX_TILE);
        if ((d >> 25) & 1) m |= CT_HWF_BIT(CT_HWF_AMX_INT8);
    }
    unsigned max_sub = a;
    if (max_sub >= 1 && avx512_os) {
        __cpuid_count(7, 1, a, b, c, d);
        if ((a >> 5) & 1) m |= CT_HWF_BIT(CT_HWF_AVX512_BF16);
    }
    return m;
}
#endif

#ifdef CT_PROBE_ARM64
static uint32_t hwcap_flags(void) {
    unsigned long h1 = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
    uint32_t m = 0;
    if (h1 & (1ul << 1)) m |= CT_HWF_BIT(CT_HWF_NEON);        /* HWCAP_ASIMD */
    if (h1 & (1ul << 10)) m |= CT_HWF_BIT(CT_HWF_FP16_ARITH); /* HWCAP_ASIMDHP */
    if (h1 & (1ul << 20)) m |= CT_HWF_BIT(CT_HWF_DOTPROD);    /* HWCAP_ASIMDDP */
    if (h1 & (1ul << 22)) m |= CT_HWF_BIT(CT_HWF_SVE);        /* HWCAP_SVE */
    if (h2 & (1ul << 1)) m |= CT_HWF_BIT(CT_HWF_SVE2);        /* HWCAP2_SVE2 */
    if (h2 & (1ul << 13)) m |= CT_HWF_BIT(CT_HWF_I8MM);       /* HWCAP2_I8MM */
    if (h2 & (1ul << 14)) m |= CT_HWF_BIT(CT_HWF_BF16);       /* HWCAP2_BF16 */
    if (h2 & (1ul << 23)) m |= CT_HWF_BIT(CT_HWF_SME);        /* HWCAP2_SME */
    return m;
}
#endif

/* ---- sysfs topology --------------------------------------------------------------------- */

static void probe_topology(const char *root, ct_hw_profile *p, int live) {
    int ids[CT_HW_MAX_CPUS];
    int n = list_numbered(root, "sys/devices/system/cpu", "cpu", ids, CT_HW_MAX_CPUS);
    if (n < 0) {
        ct_hw_note(p, "cannot list /sys/devices/system/cpu");
        n = 0;
    }
    if (p->n_logical == 0) {
        p->n_logical = n;
        if (n == 0 && live) {
            long c = sysconf(_SC_NPROCESSORS_ONLN);
            p->n_logical = c > 0 ? (int)(c > CT_HW_MAX_CPUS ? CT_HW_MAX_CPUS : c) : 0;
        }
    }
    long long pk[CT_HW_MAX_CPUS], co[CT_HW_MAX_CPUS], fr[CT_HW_MAX_CPUS];
    int n_topo = 0, n_freq = 0;
    for (int i = 0; i < n; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", ids[i]);
        pk[i] = read_num(root, rel);
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/core_id", ids[i]);
        co[i] = read_num(root, rel);
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", ids[i]);
        fr[i] = read_num(root, rel);
        if (pk[i] >= 0 && co[i] >= 0) n_topo++;
        if (fr[i] > 0) n_freq++;
    }
    /* physical cores: distinct (package, core) pairs */
    int phys = 0;
    for (int i = 0; i < n; i++) {
        if (pk[i] < 0 || co[i] < 0) continue;
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = pk[j] == pk[i] && co[j] == co[i];
        phys += !dup;
    }
    p->n_physical = phys > 0 ? phys : p->n_logical;
    if (n > 0 && n_topo < n) ct_hw_note(p, "topology missing for %d of %d CPUs", n - n_topo, n);
    /* clusters: identical cpuinfo_max_freq, fastest first */
    p->n_clusters = 0;
    for (int i = 0; i < n; i++) {
        if (fr[i] <= 0) continue;
        int c = 0;
        while (c < p->n_clusters && p->clusters[c].max_khz != (uint32_t)fr[i]) c++;
        if (c == p->n_clusters) {
            if (c == CT_HW_MAX_CLUSTERS) continue;
            memset(&p->clusters[c], 0, sizeof p->clusters[c]);
            p->clusters[c].max_khz = (uint32_t)fr[i];
            p->n_clusters++;
        }
        p->clusters[c].cpus[p->clusters[c].n_cpus++] = ids[i];
    }
    for (int i = 1; i < p->n_clusters; i++)
        for (int j = i; j > 0 && p->clusters[j - 1].max_khz < p->clusters[j].max_khz; j--) {
            ct_hw_cluster t = p->clusters[j];
            p->clusters[j] = p->clusters[j - 1];
            p->clusters[j - 1] = t;
        }
    if (n > 0 && n_freq == 0) ct_hw_note(p, "no cpufreq data (no clusters)");
    else if (n_freq < n) ct_hw_note(p, "cpufreq missing for %d of %d CPUs", n - n_freq, n);

    int nodes[1024];
    int nn = list_numbered(root, "sys/devices/system/node", "node", nodes, 1024);
    p->numa_nodes = nn > 0 ? nn : 1;
}

static void probe_meminfo(const char *root, ct_hw_profile *p) {
    char *b = read_rel(root, "proc/meminfo", 1u << 20, NULL);
    if (!b) {
        ct_hw_note(p, "cannot read /proc/meminfo");
        return;
    }
    int got_total = 0, got_avail = 0;
    for (char *line = b; *line;) {
        char *nl = strchr(line, '\n');
        unsigned long long kb;
        char unit[8] = "";
        if (sscanf(line, "MemTotal: %llu %7s", &kb, unit) >= 1 && kb < (1ull << 44)) {
            p->ram_total_bytes = kb * 1024ull;
            got_total = 1;
        } else if (sscanf(line, "MemAvailable: %llu %7s", &kb, unit) >= 1 && kb < (1ull << 44)) {
            p->ram_available_bytes = kb * 1024ull;
            got_avail = 1;
        }
        if (!nl) break;
        line = nl + 1;
    }
    free(b);
    if (!got_total) ct_hw_note(p, "/proc/meminfo has no MemTotal");
    if (!got_avail) ct_hw_note(p, "/proc/meminfo has no MemAvailable");
}

static int file_contains(const char *root, const char *rel, const char *needle, int fold) {
    size_t n = 0;
    char *b = read_rel(root, rel, 1u << 20, &n);
    if (!b) return 0;
    size_t k = strlen(needle);
    int hit = 0;
    for (size_t i = 0; !hit && i + k <= n; i++) {
        size_t j = 0;
        while (j < k && (fold ? tolower((unsigned char)b[i + j]) : b[i + j]) == needle[j]) j++;
        hit = j == k;
    }
    free(b);
    return hit;
}

/* ---- containers: affinity mask and cgroup limits ---------------------------------------- */

/* Parses a kernel CPU list ("0-3,6,8-11") into ascending ids below CT_HW_MAX_CPUS. Returns the
   count, or -1 when the text is not a CPU list. *dropped counts ids beyond the record. */
static int parse_cpulist(const char *s, const char *e, int *out, int *dropped) {
    unsigned char seen[CT_HW_MAX_CPUS] = {0};
    *dropped = 0;
    int any = 0;
    while (s < e) {
        while (s < e && (*s == ' ' || *s == '\t' || *s == ',')) s++;
        if (s >= e) break;
        char *end;
        if (!isdigit((unsigned char)*s)) return -1;
        long a = strtol(s, &end, 10), b = a;
        s = end;
        if (s < e && *s == '-') {
            if (++s >= e || !isdigit((unsigned char)*s)) return -1;
            b = strtol(s, &end, 10);
            s = end;
        }
        if (b < a || b > 1000000) return -1;
        for (long c = a; c <= b; c++) {
            if (c < CT_HW_MAX_CPUS) seen[c] = 1;
            else (*dropped)++;
        }
        any = 1;
        if (s < e && *s != ',' && !isspace((unsigned char)*s)) return -1;
    }
    if (!any) return -1;
    int n = 0;
    for (int c = 0; c < CT_HW_MAX_CPUS; c++)
        if (seen[c]) out[n++] = c;
    return n;
}

/* The value of `key:` in a "Key:\tvalue" file as [*vs, *ve); 0 when absent. */
static int find_field(const char *b, const char *key, const char **vs, const char **ve) {
    size_t kl = strlen(key);
    for (const char *line = b; *line;) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        if ((size_t)(end - line) > kl && memcmp(line, key, kl) == 0 && line[kl] == ':') {
            *vs = line + kl + 1;
            *ve = end;
            trim(vs, ve);
            return 1;
        }
        line = nl ? nl + 1 : end;
    }
    return 0;
}

/* allowed_cpus: sched_getaffinity on the live root, else `Cpus_allowed_list:` of
   /proc/self/status (a snapshot without the file keeps "all CPUs"). */
static void probe_affinity(const char *root, ct_hw_profile *p, int live) {
    if (live) {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0) {
            int n = 0, dropped = 0;
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set)) {
                    if (c < CT_HW_MAX_CPUS) p->allowed_cpus[n++] = c;
                    else dropped++;
                }
            p->n_allowed_cpus = n;
            if (dropped)
                ct_hw_note(p, "%d allowed CPUs past id %d not recorded", dropped, CT_HW_MAX_CPUS - 1);
            return;
        }
        ct_hw_note(p, "sched_getaffinity failed");
    }
    char *b = read_rel(root, "proc/self/status", 1u << 20, NULL);
    if (!b) return;
    const char *vs, *ve;
    if (find_field(b, "Cpus_allowed_list", &vs, &ve)) {
        int dropped = 0, n = parse_cpulist(vs, ve, p->allowed_cpus, &dropped);
        if (n < 0) ct_hw_note(p, "/proc/self/status: Cpus_allowed_list is not a CPU list");
        else p->n_allowed_cpus = n;
        if (dropped)
            ct_hw_note(p, "%d allowed CPUs past id %d not recorded", dropped, CT_HW_MAX_CPUS - 1);
    }
    free(b);
}

#define CG_NONE (1ull << 60) /* a limit this large (v1 "unlimited" is ~2^63) means none */

/* Reads a cgroup value file: 1 with *v for a number, 0 for "max" / "-1" / missing, -1 garbled. */
static int read_cg_value(const char *root, const char *rel, unsigned long long *v) {
    char *b = read_rel(root, rel, 4096, NULL);
    if (!b) return 0;
    char *s = b, *end = NULL;
    while (*s == ' ' || *s == '\t') s++;
    int r = -1;
    if (strncmp(s, "max", 3) == 0 || strncmp(s, "-1", 2) == 0) {
        r = 0;
        end = s + (*s == 'm' ? 3 : 2);
    } else if (isdigit((unsigned char)*s)) {
        *v = strtoull(s, &end, 10);
        r = 1;
    }
    while (end && isspace((unsigned char)*end)) end++;
    if (!end || *end) r = -1;
    free(b);
    return r;
}

/* Reads `key <number>` from a memory.stat file; 0 when absent. */
static unsigned long long read_stat_key(const char *root, const char *rel, const char *key) {
    char *b = read_rel(root, rel, 1u << 20, NULL);
    if (!b) return 0;
    unsigned long long v = 0;
    size_t kl = strlen(key);
    for (const char *line = b; *line;) {
        const char *nl = strchr(line, '\n');
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ') v = strtoull(line + kl + 1, NULL, 10);
        if (!nl) break;
        line = nl + 1;
    }
    free(b);
    return v;
}

/* One controller's cgroup directory: the mount (relative to root) and the process's path. */
typedef struct {
    int v1;           /* 1: v1 hierarchy for this controller, 0: v2 unified, -1: none found */
    char dir[MAX_PATH]; /* mount + path, relative to root */
    size_t mount_len; /* length of the mount part of dir */
} cg_loc;

static int rel_is_dir(const char *root, const char *rel) {
    char p[MAX_PATH];
    rpath(p, sizeof p, root, rel);
    DIR *d = p[0] ? opendir(p) : NULL;
    if (d) closedir(d);
    return d != NULL;
}

/* Finds the cgroup of controller ctl ("cpu" or "memory") from /proc/self/cgroup: a v1 line
   naming ctl wins over the v2 "0::" line (hybrid hosts). */
static cg_loc find_cgroup(const char *root, const char *self_cgroup, const char *ctl, ct_hw_profile *p) {
    cg_loc L = {-1, "", 0};
    const char *v2path = NULL, *v2end = NULL;
    for (const char *line = self_cgroup; *line;) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c2 && c2 + 1 < end && c2[1] == '/') {
            if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
                v2path = c2 + 1;
                v2end = end;
            } else {
                /* v1: comma-separated controller names between the colons */
                for (const char *t = c1 + 1; t < c2;) {
                    const char *te = memchr(t, ',', (size_t)(c2 - t));
                    if (!te) te = c2;
                    if ((size_t)(te - t) == strlen(ctl) && memcmp(t, ctl, (size_t)(te - t)) == 0) {
                        char m[256];
                        snprintf(m, sizeof m, "sys/fs/cgroup/%.*s", (int)(c2 - c1 - 1), c1 + 1);
                        if (!rel_is_dir(root, m)) snprintf(m, sizeof m, "sys/fs/cgroup/%s", ctl);
                        L.v1 = 1;
                        L.mount_len = strlen(m);
                        snprintf(L.dir, sizeof L.dir, "%s%.*s", m, (int)(end - c2 - 1), c2 + 1);
                        break;
                    }
                    t = te + 1;
                }
            }
        }
        if (L.v1 == 1) break;
        line = nl ? nl + 1 : end;
    }
    if (L.v1 < 0 && v2path) {
        L.v1 = 0;
        L.mount_len = strlen("sys/fs/cgroup");
        snprintf(L.dir, sizeof L.dir, "sys/fs/cgroup%.*s", (int)(v2end - v2path), v2path);
    }
    if (L.v1 >= 0) {
        size_t n = strlen(L.dir);
        while (n > L.mount_len && L.dir[n - 1] == '/') L.dir[--n] = 0;
        if (strstr(L.dir, "/..")) {
            ct_hw_note(p, "/proc/self/cgroup: path with '..' ignored");
            L.v1 = -1;
        }
    }
    return L;
}

/* Steps dir up one level; 0 once the mount itself has been visited. */
static int cg_up(cg_loc *L) {
    size_t n = strlen(L->dir);
    if (n <= L->mount_len) return 0;
    while (n > L->mount_len && L->dir[n - 1] != '/') n--;
    if (n > L->mount_len) n--; /* the '/' itself */
    L->dir[n] = 0;
    return 1;
}

/* cgroup_cpus and the memory limit: the smallest limit on the way from the process's cgroup
   up to the mount (a parent's limit binds its children); usage from the first level found. */
static void probe_cgroup(const char *root, ct_hw_profile *p) {
    char *self = read_rel(root, "proc/self/cgroup", 1u << 16, NULL);
    if (!self) return; /* no cgroup information: no limits */
    char rel[MAX_PATH + 64];
    cg_loc L = find_cgroup(root, self, "cpu", p);
    for (int more = L.v1 >= 0; more; more = cg_up(&L)) {
        double cpus = 0;
        if (L.v1 == 0) {
            snprintf(rel, sizeof rel, "%s/cpu.max", L.dir);
            char *b = read_rel(root, rel, 4096, NULL);
            if (!b) continue;
            unsigned long long q = 0, per = 0;
            char word[8] = "";
            if (sscanf(b, "%llu %llu", &q, &per) == 2 && q > 0 && per > 0)
                cpus = (double)q / (double)per;
            else if (sscanf(b, "%7s", word) != 1 || strcmp(word, "max") != 0)
                ct_hw_note(p, "%s is garbled", rel);
            free(b);
        } else {
            unsigned long long q = 0, per = 0;
            snprintf(rel, sizeof rel, "%s/cpu.cfs_quota_us", L.dir);
            int rq = read_cg_value(root, rel, &q);
            snprintf(rel, sizeof rel, "%s/cpu.cfs_period_us", L.dir);
            int rp = read_cg_value(root, rel, &per);
            if (rq < 0 || rp < 0) ct_hw_note(p, "%s/cpu.cfs_* is garbled", L.dir);
            else if (rq == 1 && rp == 1 && q > 0 && per > 0) cpus = (double)q / (double)per;
        }
        if (cpus > 0 && (p->cgroup_cpus == 0 || cpus < p->cgroup_cpus)) p->cgroup_cpus = cpus;
    }
    L = find_cgroup(root, self, "memory", p);
    int used_read = 0;
    for (int more = L.v1 >= 0; more; more = cg_up(&L)) {
        unsigned long long lim = 0, cur = 0;
        snprintf(rel, sizeof rel, "%s/%s", L.dir, L.v1 ? "memory.limit_in_bytes" : "memory.max");
        int r = read_cg_value(root, rel, &lim);
        if (r < 0) ct_hw_note(p, "%s is garbled", rel);
        if (r == 1 && lim < CG_NONE && (!p->cgroup_mem_limit_bytes || lim < p->cgroup_mem_limit_bytes))
            p->cgroup_mem_limit_bytes = lim;
        snprintf(rel, sizeof rel, "%s/%s", L.dir, L.v1 ? "memory.usage_in_bytes" : "memory.current");
        if (!used_read && read_cg_value(root, rel, &cur) == 1) {
            /* file cache the kernel reclaims under pressure is not in use (as `docker stats`) */
            snprintf(rel, sizeof rel, "%s/memory.stat", L.dir);
            unsigned long long inact =
                read_stat_key(root, rel, L.v1 ? "total_inactive_file" : "inactive_file");
            p->cgroup_mem_used_bytes = cur > inact ? cur - inact : 0;
            used_read = 1;
        }
    }
    if (!p->cgroup_mem_limit_bytes) p->cgroup_mem_used_bytes = 0; /* usage only matters under a limit */
    free(self);
}

/* An NVIDIA driver entry (/proc/driver/nvidia/gpus/<bus id>/information): fills gpu_name from
   its `Model:` line. Returns 1 when a GPU is listed. */
static int probe_nvidia_proc(const char *root, ct_hw_profile *p) {
    char dp[MAX_PATH];
    rpath(dp, sizeof dp, root, "proc/driver/nvidia/gpus");
    DIR *d = dp[0] ? opendir(dp) : NULL;
    if (!d) return 0;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char rel[512];
        snprintf(rel, sizeof rel, "proc/driver/nvidia/gpus/%.200s/information", de->d_name);
        char *b = read_rel(root, rel, 1u << 16, NULL);
        if (!b) continue;
        const char *vs, *ve;
        found = 1;
        if (find_field(b, "Model", &vs, &ve))
            snprintf(p->gpu_name, sizeof p->gpu_name, "%.*s", (int)(ve - vs), vs);
        free(b);
    }
    closedir(d);
    return found;
}

/* ---- CUDA driver (live root only) -------------------------------------------------------- */

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_attr_fn)(int *, int, int);

/* Returns 1 and fills the GPU fields when the driver reports a device. */
static int probe_cuda(ct_hw_profile *p) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
    cu_count_fn count = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
    cu_get_fn get = (cu_get_fn)dlsym(h, "cuDeviceGet");
    cu_name_fn name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
    cu_mem_fn mem = (cu_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
    cu_attr_fn attr = (cu_attr_fn)dlsym(h, "cuDeviceGetAttribute");
    int ok = 0, n = 0, dev = 0;
    if (init && count && get && init(0) == 0 && count(&n) == 0 && n > 0 && get(&dev, 0) == 0) {
        ok = 1;
        if (name && name(p->gpu_name, (int)sizeof p->gpu_name, dev) != 0) p->gpu_name[0] = 0;
        size_t bytes = 0;
        if (mem && mem(&bytes, dev) == 0) p->gpu_mem_bytes = bytes;
        if (attr) {
            int v = 0;
            if (attr(&v, 16, dev) == 0) p->gpu_sm_count = v;      /* MULTIPROCESSOR_COUNT */
            if (attr(&v, 75, dev) == 0) p->gpu_capability[0] = v; /* COMPUTE_CAPABILITY_MAJOR */
            if (attr(&v, 76, dev) == 0) p->gpu_capability[1] = v; /* COMPUTE_CAPABILITY_MINOR */
            if (attr(&v, 18, dev) == 0) p->gpu_integrated = v;    /* INTEGRATED */
        }
    } else {
        ct_hw_note(p, "libcuda.so.1 present but no usable device");
    }
    dlclose(h);
    return ok;
}

/* ---- entry points ------------------------------------------------------------------------ */

ct_status ct_hw_probe(const char *root, ct_hw_profile *out, char *err, size_t errcap) {
    if (!root || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "probe: NULL argument");
    ct_hw_profile p;
    ct_hw_profile_init(&p);
    int live = strcmp(root, "/") == 0;
    snprintf(p.source, sizeof p.source, "probe:%.140s", root);
    int have_flags = 0;
    probe_cpuinfo(root, &p, &have_flags);
    if (live) {
        struct utsname u;
        if (uname(&u) == 0) {
            if (strcmp(u.machine, "x86_64") == 0 || strcmp(u.machine, "aarch64") == 0)
                snprintf(p.arch, sizeof p.arch, "%.15s", u.machine);
            else if (strcmp(u.machine, "arm64") == 0)
                snprintf(p.arch, sizeof p.arch, "aarch64");
        }
#if defined(CT_PROBE_X86)
        if (!have_flags) p.flags = cpuid_flags();
#elif defined(CT_PROBE_ARM64)
        if (!have_flags) p.flags = hwcap_flags();
#endif
    } else {
        snprintf(p.arch, sizeof p.arch, "%s", ct_hw_arch_from_flags(p.flags));
    }
    if (!p.cpu_model[0]) {
        /* ARM boards: /proc/cpuinfo names no model; the device tree does */
        char *m = read_rel(root, "proc/device-tree/model", 4096, NULL);
        if (m) {
            snprintf(p.cpu_model, sizeof p.cpu_model, "%.127s", m);
            free(m);
        }
    }
    probe_topology(root, &p, live);
    probe_meminfo(root, &p);
    probe_affinity(root, &p, live);
    probe_cgroup(root, &p);
    int tz[4096];
    int ntz = list_numbered(root, "sys/class/thermal", "thermal_zone", tz, 4096);
    p.thermal_zones = ntz > 0 ? ntz : 0;
    if (file_contains(root, "proc/version", "microsoft", 1))
        snprintf(p.host_os, sizeof p.host_os, "wsl2");

    char tp[MAX_PATH];
    int tegra = ct_file_exists(rpath(tp, sizeof tp, root, "etc/nv_tegra_release")) ||
                file_contains(root, "proc/device-tree/compatible", "tegra", 0);
    int cuda = live && probe_cuda(&p);
    if (cuda) {
        snprintf(p.accelerator, sizeof p.accelerator, "%s", tegra ? "cuda_unified" : "cuda_discrete");
        if (tegra) p.gpu_integrated = 1;
        p.supports_bf16 = p.gpu_capability[0] >= 8;
        p.supports_fp16 = 1;
    } else if (tegra) {
        snprintf(p.accelerator, sizeof p.accelerator, "cuda_unified");
        p.gpu_mem_bytes = p.ram_total_bytes;
        p.gpu_integrated = 1;
        p.supports_bf16 = 1;
        p.supports_fp16 = 1;
    } else {
        if (probe_nvidia_proc(root, &p)) {
            /* the driver lists a GPU; memory and capability need the CUDA driver API */
            snprintf(p.accelerator, sizeof p.accelerator, "cuda_discrete");
            ct_hw_note(&p, "GPU from /proc/driver/nvidia without the CUDA driver: memory and "
                           "capability unknown");
        }
        if (strcmp(p.arch, "x86_64") == 0)
            p.supports_bf16 = (p.flags & (CT_HWF_BIT(CT_HWF_AVX512_BF16) | CT_HWF_BIT(CT_HWF_AMX_BF16))) != 0;
        else
            p.supports_bf16 = (p.flags & CT_HWF_BIT(CT_HWF_BF16)) != 0;
        p.supports_fp16 = (p.flags & CT_HWF_BIT(CT_HWF_FP16_ARITH)) || strcmp(p.arch, "x86_64") == 0;
    }
    *out = p;
    return CT_OK;
}

ct_status ct_hw_detect(const char *root, ct_hw_profile *out, char *err, size_t errcap) {
    const char *ov = getenv("CODECTALK_HW_PROFILE");
    if (!root && ov && *ov) return ct_hw_load_override(ov, out, err, errcap);
    return ct_hw_probe(root ? root : "/", out, err, errcap);
}
