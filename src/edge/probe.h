/* Hardware probe: reads /proc and /sys below a filesystem root (so tests run on captured
   snapshots), consults cpuid/HWCAP and the CUDA driver only for the live root "/". */
#ifndef CT_EDGE_PROBE_H
#define CT_EDGE_PROBE_H

#include "edge/hw.h"

/* Probes the machine whose filesystem is mounted at root ("/" = this machine). Never fails
   on missing or garbled files: what cannot be read keeps its default and is named in
   out->notes. For root "/" only: the ISA comes from cpuid (x86) / getauxval HWCAP (aarch64)
   when /proc/cpuinfo lists no flags, CUDA is probed through dlopen("libcuda.so.1"), and the
   allowed CPUs come from sched_getaffinity (a snapshot's from /proc/self/status). cgroup
   limits are read below root for both (docs/EDGE.md 1).
   Returns CT_ERR_INVALID_ARG only for a NULL argument. */
ct_status ct_hw_probe(const char *root, ct_hw_profile *out, char *err, size_t errcap);

/* The profile the engine uses: CODECTALK_HW_PROFILE (file path or inline JSON) when that
   variable is set and root is NULL, otherwise ct_hw_probe(root ? root : "/"). Errors come
   only from a malformed override. */
ct_status ct_hw_detect(const char *root, ct_hw_profile *out, char *err, size_t errcap);

#endif
