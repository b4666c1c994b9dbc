/* Weight cache: the matrices a load-time weight format converts, written once per model +
   formats + engine version under <cache_dir>/weights/ and mmap'd by later loads instead of
   converting (ct_model_params.cache_dir). Never fails a load: problems become
   m->cache_warn. */
#ifndef CT_MODEL_WCACHE_H
#define CT_MODEL_WCACHE_H

#include "model/model_internal.h"

/* Names m's cache file (m->cache_path) and maps it into m->qst when it exists and its
   metadata match this model.safetensors (size, mtime, header hash), m->wfmt and the engine
   version; a file that exists but does not open or match is noted in m->cache_warn (the load
   converts and rebuilds it). Call after m->st is open and before binding. */
void ct_wcache_open(ct_model *m, const char *cache_dir);

/* After binding: when matrices were converted at load, writes every quantized layer / head
   matrix of m (and its scales) to m->cache_path atomically (a unique temporary file, then
   rename), with the weight panels when the load packed them; a cache file that was used but
   lacked this load's panels is rewritten the same way. A failure is noted in m->cache_warn. */
void ct_wcache_write(ct_model *m);

/* A quantizable matrix of a loaded model, named as in model.safetensors. */
typedef struct {
    char name[160];
    const ct_mat *w;
} ct_qmat_ref;

/* The transformer layer matrices, the codec head and the predictor heads of m, in
   model.safetensors names, into out[cap]; returns how many there are (all of them when cap
   is large enough: 7 * (talker + predictor layers) + n_groups). */
int ct_model_qmats(const ct_model *m, ct_qmat_ref *out, int cap);

#endif
