/* Machine limits for the benchmarks: sustained read bandwidth and peak F32 FMA rate. */
#ifndef CT_ROOFLINE_H
#define CT_ROOFLINE_H

typedef struct {
    double read_gbs_1t;   /* GB/s, one thread */
    double read_gbs_nt;   /* GB/s, n_threads */
    double fma_gflops_1t; /* GFLOP/s (2 flops per FMA lane), one thread */
    double fma_gflops_nt;
    int n_threads;
    const char *isa;      /* the vector width the FMA loop used */
} ct_roofline;

/* Measures with buffers of buf_mib MiB (>= 4x the last-level cache for a DRAM figure). */
void ct_roofline_measure(int n_threads, int buf_mib, ct_roofline *out);

#endif
