/* Monotonic wall clock in milliseconds. */
#ifndef CT_CLOCK_H
#define CT_CLOCK_H

#include <time.h>

static inline double ct_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif
