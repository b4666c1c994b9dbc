/* CPU feature detection and one-time kernel selection. */
#define _DEFAULT_SOURCE /* syscall() for the AMX permission request */
#include "kernels/cpu.h"

#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

static const char *isa_names[CT_ISA_COUNT] = {"scalar", "avx2", "avx512", "avx512bf16", "neon",
                                              "neon-dotprod"};

const char *ct_isa_name(ct_isa isa) {
    return (unsigned)isa < CT_ISA_COUNT ? isa_names[isa] : "?";
}

ct_status ct_isa_parse(const char *name, ct_isa *out) {
    for (int i = 0; i < CT_ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            *out = (ct_isa)i;
            return CT_OK;
        }
    return CT_ERR_INVALID_ARG;
}

void ct_cpu_detect(ct_cpu_features *f) {
    memset(f, 0, sizeof *f);
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1;
    f->fma = (c >> 12) & 1;
    f->f16c = (c >> 29) & 1;
    int avx_hw = (c >> 28) & 1;
    unsigned long long xcr0 = 0;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    int ymm_os = (xcr0 & 0x6) == 0x6;
    int zmm_os = (xcr0 & 0xe6) == 0xe6;
    int amx_os = (xcr0 & 0x60000) == 0x60000;
    f->avx = avx_hw && ymm_os;
    if (!f->avx) f->fma = f->f16c = 0;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f->avx2 = f->avx && ((b >> 5) & 1);
        if (zmm_os) {
            f->avx512f = (b >> 16) & 1;
            f->avx512dq = (b >> 17) & 1;
            f->avx512bw = (b >> 30) & 1;
            f->avx512vl = (b >> 31) & 1;
            f->avx512vnni = (c >> 11) & 1;
            f->avx512fp16 = (d >> 23) & 1;
        }
        if (amx_os) {
            f->amx_bf16 = (d >> 22) & 1;
            f->amx_int8 = (d >> 25) & 1;
        }
        __cpuid_count(7, 1, a, b, c, d);
        if (zmm_os) f->avx512bf16 = (a >> 5) & 1;
        f->avx_vnni = f->avx && ((a >> 4) & 1);
    }
#elif defined(__aarch64__)
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->neon = (hw >> 1) & 1;     /* HWCAP_ASIMD */
    f->fphp = (hw >> 9) & 1;     /* HWCAP_FPHP */
    f->asimddp = (hw >> 20) & 1; /* HWCAP_ASIMDDP */
    f->sve = (hw >> 22) & 1;     /* HWCAP_SVE */
    f->sve2 = (hw2 >> 1) & 1;    /* HWCAP2_SVE2 */
    f->i8mm = (hw2 >> 13) & 1;   /* HWCAP2_I8MM */
    f->bf16 = (hw2 >> 14) & 1;   /* HWCAP2_BF16 */
    f->sme = (hw2 >> 23) & 1;    /* HWCAP2_SME */
#endif
}

int ct_isa_supported(ct_isa isa, const ct_cpu_features *f) {
    switch (isa) {
    case CT_ISA_SCALAR: return 1;
    case CT_ISA_AVX2: return f->avx2 && f->fma && f->f16c;
    case CT_ISA_AVX512: return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->f16c;
    case CT_ISA_AVX512BF16:
        return ct_isa_supported(CT_ISA_AVX512, f) && f->avx512bf16 && f->avx512vnni;
    case CT_ISA_NEON: return f->neon;
    case CT_ISA_NEON_DOTPROD: return f->neon && f->asimddp;
    case CT_ISA_COUNT: break;
    }
    return 0;
}

ct_matmul_rows_fn ct_matmul_rows_for(ct_isa isa) {
    switch (isa) {
    case CT_ISA_SCALAR: return ct_matmul_rows_scalar;
#if defined(__x86_64__)
    case CT_ISA_AVX2: return ct_matmul_rows_avx2;
    case CT_ISA_AVX512: return ct_matmul_rows_avx512;
    case CT_ISA_AVX512BF16: return ct_matmul_rows_avx512bf16;
#endif
#if defined(__aarch64__)
    case CT_ISA_NEON: return ct_matmul_rows_neon;
    case CT_ISA_NEON_DOTPROD: return ct_matmul_rows_neon_dotprod;
#endif
    default: return NULL;
    }
}

int ct_cv_kernels_for(ct_isa isa, ct_cv_gemm_fn *gemm, ct_cv_snake_fn *snake) {
    switch (isa) {
    case CT_ISA_SCALAR:
        *gemm = ct_cv_gemm_range_scalar;
        *snake = ct_cv_snake_rows_scalar;
        return 0;
#if defined(__x86_64__)
    case CT_ISA_AVX2:
        *gemm = ct_cv_gemm_range_avx2;
        *snake = ct_cv_snake_rows_avx2;
        return 0;
    case CT_ISA_AVX512:
    case CT_ISA_AVX512BF16:
        *gemm = ct_cv_gemm_range_avx512;
        *snake = ct_cv_snake_rows_avx512;
        return 0;
#endif
    default: return -1;
    }
}

ct_cv_elu_fn ct_cv_elu_for(ct_isa isa) {
    switch (isa) {
    case CT_ISA_SCALAR: return ct_cv_elu_scalar;
#if defined(__x86_64__)
    case CT_ISA_AVX2: return ct_cv_elu_avx2;
    case CT_ISA_AVX512:
    case CT_ISA_AVX512BF16: return ct_cv_elu_avx512;
#endif
    default: return NULL;
    }
}

ct_swiglu_fn ct_swiglu_for(ct_isa isa) {
    switch (isa) {
    case CT_ISA_SCALAR: return ct_swiglu_scalar;
#if defined(__x86_64__)
    case CT_ISA_AVX2: return ct_swiglu_avx2;
    case CT_ISA_AVX512:
    case CT_ISA_AVX512BF16: return ct_swiglu_avx512;
#endif
    default: return NULL;
    }
}

ct_rmsnorm_fn ct_rmsnorm_for(ct_isa isa) {
    switch (isa) {
    case CT_ISA_SCALAR: return ct_rmsnorm_scalar;
#if defined(__x86_64__)
    case CT_ISA_AVX2: return ct_rmsnorm_avx2;
    case CT_ISA_AVX512:
    case CT_ISA_AVX512BF16: return ct_rmsnorm_avx512;
#endif
    default: return NULL;
    }
}

ct_isa ct_isa_best(const ct_cpu_features *f) {
    for (int i = CT_ISA_COUNT - 1; i > 0; i--)
        if (ct_isa_supported((ct_isa)i, f) && ct_matmul_rows_for((ct_isa)i)) return (ct_isa)i;
    return CT_ISA_SCALAR;
}

/* Asks Linux for permission to use AMX tile data (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). */
static int amx_request(const ct_cpu_features *f) {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    const char *e = getenv("CODECTALK_AMX");
    if (e && strcmp(e, "0") == 0) return 0;
    if (!f->amx_bf16) return 0;
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    (void)f;
    return 0;
#endif
}

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static int amx_ok;

static void amx_probe(void) {
    ct_cpu_features f;
    ct_cpu_detect(&f);
    amx_ok = amx_request(&f);
}

int ct_amx_available(void) {
    pthread_once(&amx_once, amx_probe);
    return amx_ok;
}

int ct_isa_uses_vnni(ct_isa isa, const ct_cpu_features *f) {
    if (isa == CT_ISA_AVX512 || isa == CT_ISA_AVX512BF16) return f->avx512vnni ? CT_VNNI_512 : CT_VNNI_NONE;
    if (isa != CT_ISA_AVX2) return CT_VNNI_NONE;
    return f->avx_vnni ? CT_VNNI_AVX : f->avx512vnni && f->avx512vl ? CT_VNNI_256 : CT_VNNI_NONE;
}

static pthread_mutex_t sel_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_kernel_table table;
static int selected; /* guarded by sel_lock; table is read-only afterwards */

ct_status ct_kernels_init(const char *force, char *err, size_t errcap) {
    ct_cpu_features f;
    ct_cpu_detect(&f);
    const char *req = force ? force : getenv("CODECTALK_ISA");
    ct_isa isa;
    if (req && req[0] && strcmp(req, "auto") != 0) {
        if (ct_isa_parse(req, &isa) != CT_OK)
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "CODECTALK_ISA='%s' is not one of scalar, "
                           "avx2, avx512, avx512bf16, neon, neon-dotprod, auto", req);
        if (!ct_isa_supported(isa, &f))
            return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "ISA level '%s' is not supported by this "
                           "CPU (best available: %s)", req, ct_isa_name(ct_isa_best(&f)));
        if (!ct_matmul_rows_for(isa))
            return ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "this build has no '%s' kernels", req);
    } else {
        isa = ct_isa_best(&f);
    }
    pthread_mutex_lock(&sel_lock);
    ct_status st = CT_OK;
    if (!selected) {
        table.isa = isa;
        table.matmul_rows = ct_matmul_rows_for(isa);
        table.attend_head = ct_attend_head_scalar;
        if (ct_cv_kernels_for(isa, &table.cv_gemm, &table.cv_snake) != 0)
            ct_cv_kernels_for(CT_ISA_SCALAR, &table.cv_gemm, &table.cv_snake);
        table.cv_elu = ct_cv_elu_for(isa);
        if (!table.cv_elu) table.cv_elu = ct_cv_elu_scalar;
        table.swiglu = ct_swiglu_for(isa);
        if (!table.swiglu) table.swiglu = ct_swiglu_scalar;
        table.rmsnorm = ct_rmsnorm_for(isa);
        if (!table.rmsnorm) table.rmsnorm = ct_rmsnorm_scalar;
#if defined(__x86_64__)
        if (isa == CT_ISA_AVX2) table.attend_head = ct_attend_head_avx2;
        if (isa == CT_ISA_AVX512 || isa == CT_ISA_AVX512BF16) table.attend_head = ct_attend_head_avx512;
#endif
#if defined(__aarch64__)
        if (isa == CT_ISA_NEON || isa == CT_ISA_NEON_DOTPROD) table.attend_head = ct_attend_head_neon;
#endif
        /* CODECTALK_VNNI=0: the avx2 and avx512 levels run the integer-dot mode with VPMADDUBSW,
           as on CPUs without VNNI (avx512bf16 implies VNNI and keeps it) */
        const char *ve = getenv("CODECTALK_VNNI");
        const int vk = ve && strcmp(ve, "0") == 0 && isa != CT_ISA_AVX512BF16 ? CT_VNNI_NONE
                                                                              : ct_isa_uses_vnni(isa, &f);
#if defined(__x86_64__)
        ct_matmul_vnni_enable(vk == CT_VNNI_512);
        ct_matmul_avx2_dot_select(vk);
        table.amx = isa == CT_ISA_AVX512BF16 && ct_amx_available();
        ct_matmul_amx_enable(table.amx);
        if (table.amx) table.cv_gemm = ct_cv_gemm_range_amx; /* the codec's GEMMs on tiles as well */
        const char *ba = getenv("CODECTALK_BF16_ACT");
        table.bf16act = isa == CT_ISA_AVX512BF16 && ba && strcmp(ba, "1") == 0;
        ct_matmul_bf16act_enable(table.bf16act);
#endif
        /* the levels with integer-dot kernels: VNNI (avx512bf16; avx512 where the CPU has it),
           256-bit VNNI (avx2 where the CPU has AVX-VNNI or AVX-512 VNNI), VPMADDUBSW (avx2,
           avx512 without them), SMULL (neon), SDOT (neon-dotprod) */
        const char *xa = getenv("CODECTALK_INT8_ACT");
        table.xq = (isa == CT_ISA_AVX2 || isa == CT_ISA_AVX512 || isa == CT_ISA_AVX512BF16 ||
                    isa == CT_ISA_NEON || isa == CT_ISA_NEON_DOTPROD) &&
                   !(xa && strcmp(xa, "0") == 0);
#if defined(__x86_64__)
        if (table.xq && vk == CT_VNNI_512) {
            table.xq_pan_bytes = ct_xq_pan_bytes;
            table.xq_pan_pack = ct_xq_pan_pack;
            table.xq_pan_layout = CT_XQ_PAN_LAYOUT;
        }
#endif
        static const char *vnni_names[] = {"VPMADDUBSW", "VPDPBUSD (AVX-512 VNNI)", "VPDPBUSD (AVX-VNNI)",
                                           "VPDPBUSD (AVX-512 VNNI, 256-bit)"};
        table.dot = isa == CT_ISA_NEON_DOTPROD ? "SDOT"
                    : isa == CT_ISA_NEON       ? "SMULL"
                    : isa == CT_ISA_SCALAR     ? "none"
                                               : vnni_names[vk];
        static const ct_dot_op vnni_ops[] = {CT_DOT_MADDUBS, CT_DOT_VNNI512, CT_DOT_AVXVNNI, CT_DOT_VNNI256};
        table.dot_op = isa == CT_ISA_NEON_DOTPROD ? CT_DOT_SDOT
                       : isa == CT_ISA_NEON       ? CT_DOT_SMULL
                       : isa == CT_ISA_SCALAR     ? CT_DOT_NONE
                                                  : vnni_ops[vk];
        snprintf(table.id, sizeof table.id, "%s, %s%s%s%s", ct_isa_name(isa), table.dot, table.amx ? ", amx (prefill, codec)" : "",
                 table.bf16act ? ", bf16 act" : "", table.xq || isa == CT_ISA_SCALAR ? "" : ", f32 act");
        __atomic_store_n(&selected, 1, __ATOMIC_RELEASE);
    } else if (table.isa != isa) {
        st = ct_errf(err, errcap, CT_ERR_STATE, "kernels already selected as '%s'; cannot switch "
                     "to '%s' in the same process", ct_isa_name(table.isa), ct_isa_name(isa));
    }
    pthread_mutex_unlock(&sel_lock);
    return st;
}

_Thread_local ct_xq_reuse ct_xq_tls;
_Thread_local int ct_mm_prompt;

const char *ct_kernels_id(void) { return ct_kernels()->id; }

const ct_kernel_table *ct_kernels(void) {
    if (!__atomic_load_n(&selected, __ATOMIC_ACQUIRE)) {
        char err[256];
        if (ct_kernels_init(NULL, err, sizeof err) != CT_OK) ct_kernels_init("scalar", err, sizeof err);
    }
    return &table;
}
