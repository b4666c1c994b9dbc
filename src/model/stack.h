/* One Qwen3-style decoder stack (talker or code predictor): pre-norm layers with QK-norm,
   NeoX RoPE, grouped-query attention over an explicit per-layer KV cache, SwiGLU MLP. */
#ifndef CT_STACK_H
#define CT_STACK_H

#include "core/pool.h"
#include "kernels/ops.h"
#include "model/config.h"

typedef struct {
    const float *in_norm;   /* [H] f32 */
    ct_mat q, k, v, o;      /* q [heads*hd, H], k/v [kv*hd, H], o [H, heads*hd] */
    const float *q_norm;    /* [hd] f32 */
    const float *k_norm;    /* [hd] f32 */
    const float *post_norm; /* [H] f32 */
    ct_mat gate, up, down;  /* gate/up [F, H], down [H, F] */
} ct_layer_w;

typedef struct {
    const ct_stack_cfg *cfg;
    ct_layer_w *layers;     /* [cfg->layers] */
    const float *final_norm; /* [H] f32 */
} ct_stack_w;

/* KV cache: one K and one V tensor per layer (never stacked), each [kv_heads][cap][hd] f32. */
typedef struct {
    float **k;   /* [layers] -> [kv_heads * cap * hd] */
    float **v;   /* [layers] -> [kv_heads * cap * hd] */
    int layers;
    int cap;     /* positions */
    int kv_heads, head_dim;
} ct_kv;

/* Scratch for up to n_max tokens per call; allocated once. */
typedef struct {
    int n_max, cap;
    float *h;      /* [n_max][H] normed input */
    float *q;      /* [n_max][heads*hd] */
    float *k;      /* [n_max][kv*hd] */
    float *v;      /* [n_max][kv*hd] */
    float *att;    /* [n_max][heads*hd] */
    float *proj;   /* [n_max][H] */
    float *g;      /* [n_max][F] */
    float *u;      /* [n_max][F] */
    float *scores; /* [n_threads][heads / kv_heads][cap] attention scratch */
    ct_kv **kvs;   /* [n_max] per-token cache (filled by ct_stack_forward) */
    int *pos;      /* [n_max] per-token position */
    ct_pool *pool; /* borrowed; NULL = single thread */
    int n_threads;
    int tok_cap;   /* tokens per matmul kernel call; 0 = unlimited (prefill may use GEMM paths
                      whose arithmetic differs from the one-token path); batched decode sets
                      CT_DECODE_TOK_CAP so every stream gets its solo arithmetic */
    float *cosv;   /* [n_max][hd/2] */
    float *sinv;   /* [n_max][hd/2] */
} ct_stack_scratch;

/* Allocates a cache of cap positions for the geometry; CT_ERR_NOMEM on failure. */
ct_status ct_kv_init(ct_kv *kv, const ct_stack_cfg *cfg, int cap);
void ct_kv_free(ct_kv *kv);
/* Bytes ct_kv_init would allocate. */
size_t ct_kv_bytes(const ct_stack_cfg *cfg, int cap);

/* Scratch for n_max tokens per call and cap cache positions; pool (borrowed, may be NULL)
   runs the matmuls and attention on its threads. */
ct_status ct_stack_scratch_init(ct_stack_scratch *s, const ct_stack_cfg *cfg, int n_max, int cap,
                                ct_pool *pool);
void ct_stack_scratch_free(ct_stack_scratch *s);

/* Runs n tokens x[n][H] at positions pos0..pos0+n-1 (causal; keys 0..pos attend), appends
   their K/V at those positions, and leaves the final-normed hidden states in rows out_from..n-1
   of x (0: all; n: none, only the K/V; the rows before out_from are left undefined, and the last
   layer skips their queries, attention, o_proj and MLP, which nothing kept reads). Requires
   pos0 + n <= kv->cap and n <= s->n_max (caller checks). No allocation. Results do not
   depend on the pool's thread count (rows and heads are partitioned, never reductions). A
   prompt pass: its matmuls run with ct_mm_prompt set (kernels/cpu.h). */
void ct_stack_forward(const ct_stack_w *w, ct_kv *kv, ct_stack_scratch *s, int pos0, int n,
                      float *x, int out_from);

/* Like ct_stack_forward, but token t belongs to its own sequence: it appends to kvs[t] at
   pos[t] and attends to kvs[t] positions 0..pos[t]. Tokens of several streams share every
   weight pass (batched decode); tokens of one sequence may also be mixed in (consecutive
   positions, same cache). Each token's result is independent of the others in the batch as long
   as the matmul kernels' per-token arithmetic does not depend on n. */
void ct_stack_forward_multi(const ct_stack_w *w, ct_kv *const *kvs, const int *pos, int n,
                            ct_stack_scratch *s, float *x);

/* ct_matmul split by rows over pool (NULL = inline); same result for any thread count. */
void ct_matmul_pool(ct_pool *pool, const ct_mat *w, const float *bias, const float *x, float *y,
                    int n);
/* The same as one matmul of a prompt pass (ct_mm_prompt set), as `bench kernels` times
   prompt-sized calls. */
void ct_matmul_pool_prompt(ct_pool *pool, const ct_mat *w, const float *bias, const float *x, float *y,
                           int n);
/* The same in kernel calls of at most cap tokens (0 = unlimited). */
void ct_matmul_pool_capped(ct_pool *pool, const ct_mat *w, const float *bias, const float *x,
                           float *y, int n, int cap);

/* Token cap for batched decode: below every GEMM threshold of the kernels (CT_DP_MIN_TOKENS),
   where a token's arithmetic does not depend on how many share the call. */
#define CT_DECODE_TOK_CAP 4

#endif
