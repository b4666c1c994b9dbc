/* The machine rates the cost model uses (docs/EDGE.md 3): measured once with the micro-roofline
   (about 2 s), cached per hardware fingerprint, or estimated from the probe when measuring is
   not possible or not wanted. */
#ifndef CT_EDGE_MACHINE_H
#define CT_EDGE_MACHINE_H

#include "edge/cost.h"
#include "edge/hw.h"

#define CT_MACHINE_SCHEMA 2

/* Estimate from the probe alone: F32 FMA = threads x 2 FMA ports x vector lanes x 2 x the
   fastest cluster's clock (2.5 GHz when unknown), every format's prompt at that rate; read
   bandwidth 20 GB/s (x86) or 8 GB/s (arm64) at every size. source says "estimate: <why>". */
void ct_machine_estimate(const ct_hw_profile *hw, int n_threads, const char *why, ct_machine *out);

/* The rates for this machine: <cache root>/roofline/<fingerprint>.json when it holds a valid
   record for n_threads, measured with the selected kernels (ct_kernels_id()); else measured (unless no_measure; the n-thread FMA rate is at least the
   one-thread rate times the physical cores used) and written there; else (no_measure,
   a failed measurement) the estimate. A corrupt or mismatching cache file is replaced, with a
   note. note[notecap] says what happened when it is not a plain cache hit. Never fails. */
void ct_machine_get(const char *cache_dir, const char *fingerprint, const ct_hw_profile *hw, int n_threads,
                    int no_measure, ct_machine *out, char *note, size_t notecap);

/* JSON form of the record (malloc'd; NULL on OOM) and its strict reader (CT_ERR_FORMAT naming
   the key). */
char *ct_machine_to_json(const ct_machine *m);
ct_status ct_machine_from_json(const char *text, size_t len, ct_machine *out, char *err, size_t errcap);

#endif
