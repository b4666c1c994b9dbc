/* CPU feature probe (cpuid/xgetbv on x86, HWCAP on aarch64) and the run-time kernel table:
   the best ISA level is chosen once; CODECTALK_ISA forces one (an unsupported level is an
   error, never SIGILL). */
#ifndef CT_CPU_H
#define CT_CPU_H

#include "core/status.h"
#include "kernels/attn.h"
#include "kernels/conv.h"
#include "kernels/ops.h"

typedef enum {
    CT_ISA_SCALAR = 0,
    CT_ISA_AVX2,       /* AVX2 + FMA + F16C */
    CT_ISA_AVX512,     /* AVX-512 F/BW/VL/DQ */
    CT_ISA_AVX512BF16, /* + AVX512_BF16 + VNNI */
    CT_ISA_NEON,
    CT_ISA_NEON_DOTPROD,
    CT_ISA_COUNT
} ct_isa;

typedef struct {
    int avx, avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512bf16, avx512vnni,
        avx512fp16, amx_bf16, amx_int8, avx_vnni;
    int neon, asimddp, i8mm, fphp, bf16, sve, sve2, sme;
} ct_cpu_features;

/* Reads the running CPU's features. */
void ct_cpu_detect(ct_cpu_features *f);

const char *ct_isa_name(ct_isa isa);
/* Parses "scalar", "avx2", "avx512", "avx512bf16", "neon", "neon-dotprod". */
ct_status ct_isa_parse(const char *name, ct_isa *out);
int ct_isa_supported(ct_isa isa, const ct_cpu_features *f);
/* Which VPDPBUSD level isa runs the integer-dot mode with on a CPU with features f, 0 where none
   (VPMADDUBSW, NEON, scalar): CT_VNNI_512 at avx512bf16, and at avx512 where the CPU has AVX-512
   VNNI (ct_matmul_vnni_enable is set so at selection); at avx2 CT_VNNI_AVX where the CPU has
   AVX-VNNI, else CT_VNNI_256 where it has AVX-512 VNNI with VL (ct_matmul_avx2_dot_select). */
enum { CT_VNNI_NONE = 0, CT_VNNI_512, CT_VNNI_AVX, CT_VNNI_256 };
/* The integer-dot mode's product instruction (ct_kernel_table.dot_op): CT_DOT_MADDUBS is the
   256-bit VPMADDUBSW + VPMADDWD + VPADDD sequence, CT_DOT_SMULL the SMULL + SMLAL2 + SADALP one. */
typedef enum {
    CT_DOT_NONE = 0,
    CT_DOT_MADDUBS,
    CT_DOT_VNNI512,
    CT_DOT_AVXVNNI,
    CT_DOT_VNNI256,
    CT_DOT_SMULL,
    CT_DOT_SDOT
} ct_dot_op;
int ct_isa_uses_vnni(ct_isa isa, const ct_cpu_features *f);
/* Highest level this CPU runs and this build has kernels for. */
ct_isa ct_isa_best(const ct_cpu_features *f);

/* y[t][r] = x[t] . W[r] (+ bias[r]) for rows r in [r0, r1) and tokens t < n. r0 must be a
   multiple of CT_ROW_ALIGN and r1 a multiple of it or w->rows: each variant groups rows from
   r0 (by 4, AMX by 16), so the arithmetic for a row never depends on how the rows were split
   between threads. */
#define CT_ROW_ALIGN 16
typedef void (*ct_matmul_rows_fn)(const ct_mat *w, const float *bias, const float *x, float *y,
                                  int n, int r0, int r1);

/* Quantized-activation reuse of the integer-dot kernels, per thread: between
   ct_xq_scope_begin() and ct_xq_scope_end() a call whose x pointer, token count, width and
   weight format match the thread's previous integer-dot call reuses that call's quantized
   activations instead of quantizing x again (a pool job walking row chunks of one matmul
   quantizes once per thread, not once per chunk). The caller guarantees that no x passed
   inside the scope changes before the scope ends; outside a scope every call quantizes. The
   AMX tiles' prompt calls reuse their packed bf16 activations the same way (CT_XQ_KEY_AMX), and
   the bf16-activation GEMM its converted ones (CT_XQ_KEY_DP), the f32 prefill GEMMs their
   copies (CT_XQ_KEY_GX, CT_XQ_KEY_G2X). */
typedef struct {
    int on;
    const float *x;
    int n, cols, q4; /* q4: the layout (integer-dot 0-3, x86/matmul_vnni_avx512.c; CT_XQ_KEY_*) */
} ct_xq_reuse;
#define CT_XQ_KEY_AMX 4 /* + 1 with the lo halves: x86/matmul_avx512.c's gemm_amx */
#define CT_XQ_KEY_DP 6  /* x86/matmul_avx512.c's gemm_dp */
#define CT_XQ_KEY_GX 7  /* the f32 prefill GEMMs' activation copies (gemm_rows, x86/matmul_avx512.c) */
#define CT_XQ_KEY_G2X 8 /* (gemm2_rows, x86/matmul_avx2.c) */
extern _Thread_local ct_xq_reuse ct_xq_tls;
static inline void ct_xq_scope_begin(void) {
    ct_xq_tls.on = 1;
    ct_xq_tls.x = NULL;
}
static inline void ct_xq_scope_end(void) {
    ct_xq_tls.on = 0;
    ct_xq_tls.x = NULL;
}

typedef struct {
    ct_isa isa;
    ct_matmul_rows_fn matmul_rows;
    int amx;     /* 1: the avx512bf16 variant uses AMX tiles for BF16 prefill and the codec's GEMMs */
    int bf16act; /* 1: bf16-activation mode (CODECTALK_BF16_ACT=1) */
    ct_attend_head_fn attend_head; /* attention over one KV head (kernels/attn.h) */
    int xq;      /* 1: INT8/INT4 weights load in the integer-dot mode (ct_mat.xq): the level has
                    integer-dot kernels for it (avx512bf16: VNNI; avx2, avx512: VPMADDUBSW or
                    VNNI; neon: SMULL; neon-dotprod: SDOT) and
                    CODECTALK_INT8_ACT is not 0 */
    /* Weight panels packed at load for the integer-dot kernel, NULL where it has none (set where
       ct_matmul_rows_vnni runs the mode): bytes for a rows x cols matrix of dtype dt (INT8
       CT_DT_I8 or INT4 CT_DT_U8; 0: that shape or dtype has none), and the packing into dst
       (64-byte aligned) that ct_mat.pan then points to */
    size_t (*xq_pan_bytes)(ct_dtype dt, int rows, int cols);
    void (*xq_pan_pack)(const ct_mat *w, uint8_t *dst);
    const char *xq_pan_layout; /* names the panels' byte layout (CT_XQ_PAN_LAYOUT) where
                                  xq_pan_pack is set: panels stored in a weight file under
                                  another name are not used */
    const char *dot; /* the integer-dot mode's product instruction at this level on this CPU
                        ("VPDPBUSD (AVX-VNNI)", "VPMADDUBSW", "SDOT", ...; "none" at scalar) */
    ct_dot_op dot_op; /* the same as a value (the roofline times it: edge/roofline.c) */
    char id[96];     /* what selects the arithmetic and speed: "avx512bf16, VPDPBUSD (AVX-512 VNNI)",
                        then ", amx (prefill, codec)", ", bf16 act", ", f32 act" where they apply (ct_kernels_id) */
    ct_cv_gemm_fn cv_gemm;   /* codec-decoder multi-tap GEMM (kernels/conv.h) */
    ct_cv_snake_fn cv_snake; /* codec-decoder SnakeBeta */
    ct_cv_elu_fn cv_elu;     /* speech-encoder ELU */
    ct_swiglu_fn swiglu;     /* the transformer MLPs' SiLU gate (kernels/ops.h) */
    ct_rmsnorm_fn rmsnorm;   /* the transformers' RMSNorm (kernels/ops.h) */
} ct_kernel_table;

/* Selects the kernel table once per process: force (or, when NULL, the CODECTALK_ISA
   environment variable; unset = best). Later calls with a different request fail with
   CT_ERR_STATE. Thread-safe. At the avx512bf16 level AMX-BF16 is used for BF16 prefill when
   the CPU has it and the kernel grants tile-data permission, unless CODECTALK_AMX=0;
   CODECTALK_BF16_ACT=1 turns on the bf16-activation mode. */
ct_status ct_kernels_init(const char *force, char *err, size_t errcap);

/* The selected table (initialises with the default on first use). */
const ct_kernel_table *ct_kernels(void);
/* ct_kernels()->id: names the kernel selection a measurement was taken with (the calibration
   cache keeps it, so a run forced to another level or instruction does not reuse it). */
const char *ct_kernels_id(void);

/* Variant implementations, exposed for the kernel tests. */
void ct_matmul_rows_scalar(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                           int r0, int r1);
#if defined(__x86_64__)
void ct_matmul_rows_avx2(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1);
void ct_matmul_rows_avx512(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                           int r0, int r1);
/* As avx512, but BF16-weight prefill uses AMX on split activations where available, and the
   opt-in bf16-activation mode (ct_matmul_bf16act_enable) uses VDPBF16PS for n >=
   CT_DP_MIN_TOKENS; decode and the f32-weight path keep the f32 kernels. */
void ct_matmul_rows_avx512bf16(const ct_mat *w, const float *bias, const float *x, float *y,
                               int n, int r0, int r1);
#endif
/* Integer-dot mode (ct_mat.xq) with VPDPBUSD, for any token count when called directly; the
   avx512bf16 variant routes calls with ct_xq_active here, so does avx512 where the CPU has
   VNNI (ct_matmul_vnni_enable); avx2 and avx512 without VNNI go to ct_matmul_rows_dot_avx2,
   neon-dotprod to ct_matmul_rows_sdot, neon to ct_matmul_rows_smull, scalar computes them. */
void ct_matmul_rows_vnni(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1);
/* Its weight panels packed at load (ct_mat.pan; docs/KERNELS.md "Weight panels packed at load"):
   the bytes for a rows x cols matrix of dtype dt (0: no panels for that shape or dtype), and the
   packing of w (INT8 or INT4, a shape with bytes) into dst, 64-byte aligned. A call with w->pan
   gives bit for bit the results of the same call without. */
size_t ct_xq_pan_bytes(ct_dtype dt, int rows, int cols);
/* The layout ct_xq_pan_pack writes; a new layout takes a new name. */
#define CT_XQ_PAN_LAYOUT "avx512-vnni-1"
void ct_xq_pan_pack(const ct_mat *w, uint8_t *dst);
/* Integer-dot mode on 256-bit registers (x86/matmul_dot_body.h), for any token count; each
   computes the scalar reference's function in its order per output (bit for bit): with
   VPMADDUBSW (AVX2), with AVX-VNNI's VEX VPDPBUSD (needs f.avx_vnni) and with AVX-512 VNNI's
   EVEX VPDPBUSD on ymm registers (needs f.avx512vnni and f.avx512vl). */
void ct_matmul_rows_dot_avx2(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                             int r0, int r1);
void ct_matmul_rows_dot_avxvnni(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                                int r0, int r1);
void ct_matmul_rows_dot_vnni256(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                                int r0, int r1);
#define CT_DP_MIN_TOKENS 8
/* 1 while the calling thread runs a prompt's matmuls (model/stack.c sets it per pool job of the
   talker's prefill passes). Where AMX is on, those calls over BF16
   weights (and INT8/INT4 ones outside the integer-dot mode, which xq matrices run at every token
   count, AMX or not) take the tiles at every token count, so a prompt's result does not depend
   on its pass size; every other call (decode, batched decode) takes the level's f32 kernels,
   which read decode-sized calls faster (docs/KERNELS.md "Dispatch"). */
extern _Thread_local int ct_mm_prompt;
/* Lets the avx512 variant run the integer-dot mode with VPDPBUSD (ct_matmul_rows_vnni) instead
   of VPMADDUBSW: set at selection where the CPU has AVX-512 VNNI. Returns the new state. */
int ct_matmul_vnni_enable(int on);
/* Picks the avx2 variant's integer-dot kernel: CT_VNNI_AVX, CT_VNNI_256 or anything else for
   VPMADDUBSW (ct_isa_uses_vnni's rule, set at selection). Returns the kind now in use. */
int ct_matmul_avx2_dot_select(int kind);
/* Turns the AMX-BF16 prefill path of the avx512bf16 variant on or off (the caller must have
   obtained the OS permission for tile data); returns the new state. */
int ct_matmul_amx_enable(int on);
/* 1 when this CPU has AMX-BF16 and Linux granted tile-data permission to the process
   (requested on the first call; CODECTALK_AMX=0 answers 0). */
int ct_amx_available(void);
/* Opt-in bf16-activation mode for BF16-weight prefill (CODECTALK_BF16_ACT=1): activations are
   rounded to bf16 (VDPBF16PS, single-term AMX). Faster, but about 1e-5 NMSE off the f32
   result per matmul; off by default. Returns the new state. */
int ct_matmul_bf16act_enable(int on);
#if defined(__aarch64__)
/* NEON with f32 activations; the integer-dot mode runs ct_matmul_rows_smull. */
void ct_matmul_rows_neon(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1);
/* As neon, but calls with ct_xq_active run ct_matmul_rows_sdot (needs the dot-product
   extension, HWCAP_ASIMDDP). */
void ct_matmul_rows_neon_dotprod(const ct_mat *w, const float *bias, const float *x, float *y,
                                 int n, int r0, int r1);
/* Integer-dot mode (ct_mat.xq) with SDOT, for any token count when called directly; computes
   the scalar reference's function in its order per output. */
void ct_matmul_rows_sdot(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1);
/* The same function with SMULL/SMLAL2 and SADALP (plain ASIMD, no dot-product extension). */
void ct_matmul_rows_smull(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                          int r0, int r1);
#endif

/* The variant for an ISA level, or NULL when this build lacks it. */
ct_matmul_rows_fn ct_matmul_rows_for(ct_isa isa);

/* The codec-decoder GEMM and SnakeBeta variants of an ISA level (avx512bf16 uses the AVX-512
   ones) into *gemm and *snake. Returns 0, or -1 when this build has none for isa (the outputs
   are then left alone). The kernel table holds the selected level's, or the scalar
   reference's where that level has none. */
int ct_cv_kernels_for(ct_isa isa, ct_cv_gemm_fn *gemm, ct_cv_snake_fn *snake);
/* The ELU variant of an ISA level (avx512bf16 uses the AVX-512 one), or NULL when this build
   has none (the kernel table then holds the scalar reference). */
ct_cv_elu_fn ct_cv_elu_for(ct_isa isa);
/* The SwiGLU variant of an ISA level (avx512bf16 uses the AVX-512 one), or NULL when this
   build has none (the kernel table then holds the scalar reference). */
ct_swiglu_fn ct_swiglu_for(ct_isa isa);
/* The RMSNorm variant of an ISA level, likewise. */
ct_rmsnorm_fn ct_rmsnorm_for(ct_isa isa);

#endif
