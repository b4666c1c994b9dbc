/* Token sampler: the Hugging Face (transformers 4.57 `generate`) logits-processor chain
 * used by Qwen3-TTS, plus the multinomial draw on a counter-based RNG (docs/MODEL_PATH.md). */
#ifndef CT_SAMPLER_H
#define CT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"

/* One sampling configuration (talker or sub-talker). HF installs a warper only when it
 * changes something, and so does this code: temperature when != 1, top-k when
 * 0 < top_k < n, top-p when top_p < 1, the repetition penalty when != 1. */
typedef struct {
    int do_sample;            /* 0 = greedy (argmax), 1 = multinomial draw */
    float temperature;        /* > 0, finite; used only when do_sample */
    int top_k;                /* <= 0 disables; used only when do_sample */
    float top_p;              /* (0,1]; 1 disables; used only when do_sample */
    float repetition_penalty; /* > 0, finite; 1 disables (talker only) */
} ct_sample_cfg;

/* Bytes of scratch the two sampling functions need for a vocab of n (candidate indices,
 * weights, a top-k selection buffer, top-p sort keys): 32 n + 16; 0 for n <= 0. Allocate
 * once per vocab size (malloc alignment is enough); reuse it across calls, but never share
 * one buffer between concurrent calls. */
size_t ct_sampler_scratch_bytes(int n);

/* Talker chain + draw, in HF order:
 *   1. NaN logits become -inf (HF would fail in multinomial; here they are never chosen;
 *      done in the last pass, so a NaN stays NaN through steps 2-4);
 *   2. repetition penalty over ids with seen[i] != 0 (distinct generated codebook-0 ids):
 *      x < 0 -> x * penalty, else x / penalty (float arithmetic, as torch on CPU);
 *   3. min-new-tokens: logits[eos_id] = -inf while n_generated < min_new_tokens;
 *   4. suppression: logits[i] = -inf for suppress_lo <= i <= suppress_hi, i != eos_id
 *      (lo > hi disables; the range is clipped to [0, n));
 *   5. greedy: argmax (first index on ties); sampling: ct_sample_plain's warpers + draw.
 * logits[n] are modified in place and hold the processed scores afterwards (removed
 * entries -inf). seen (n bytes) may be NULL (nothing generated yet). eos_id outside
 * [0,n) disables the EOS-specific steps. Returns the chosen id in [0, n), or -1 without consuming
 * randomness when every processed logit is -inf, or on bad arguments (NULL logits, cfg,
 * scratch, or rng when sampling; n <= 0; a cfg that ct_sample_cfg_check rejects).
 * Consumes exactly one ct_rng_next_u64 per successful sampled draw, none in greedy mode.
 * No allocation; the result depends only on (logits, arguments, rng state). */
int ct_sample_talker(float *logits, int n, const ct_sample_cfg *cfg, const uint8_t *seen,
                     int n_generated, int min_new_tokens, int eos_id, int suppress_lo,
                     int suppress_hi, ct_rng *rng, void *scratch);

/* Plain chain for the sub-talker (no penalty, no masks): NaN -> -inf, then greedy argmax,
 * or temperature (x / T), top-k (x < k-th largest -> -inf, ties kept), top-p (HF rule:
 * sort ascending, stable by index; cumulative float softmax with double accumulation;
 * drop while cumulative <= float32(1 - top_p), the difference taken on the shortest
 * decimal of top_p as HF does on the Python double; the largest always survives),
 * softmax with max-subtraction in double, and one multinomial draw over the survivors in
 * id order (u = ct_rng_uniform, first id whose running weight sum exceeds u * total).
 * If some logits are +inf, the +inf entries share the probability equally.
 * logits[n] modified in place as above. Returns as ct_sample_talker. */
int ct_sample_plain(float *logits, int n, const ct_sample_cfg *cfg, ct_rng *rng, void *scratch);

/* Checks the fields in use: do_sample 0/1 and repetition_penalty finite > 0 always;
 * temperature finite > 0 and top_p in (0,1] when do_sample (greedy ignores them, as HF
 * does); top_k is free, <= 0 meaning off. Returns CT_OK, or CT_ERR_INVALID_ARG with a
 * message in err[errcap] (may be NULL) naming the field and its value. */
ct_status ct_sample_cfg_check(const ct_sample_cfg *cfg, char *err, size_t errcap);

#endif
