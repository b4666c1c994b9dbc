/* Read-only safetensors access: mmap the file, validate the header, look tensors up by name. */
#ifndef CT_SAFETENSORS_H
#define CT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h" /* ct_dtype, ct_dtype_size, ct_dtype_name */
#include "core/status.h"

#define CT_ST_MAX_DIMS 8

typedef struct {
    const char *name;              /* NUL-terminated, owned by the file */
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_ST_MAX_DIMS]; /* row-major, outermost first */
    uint64_t nbytes;
    const void *data;              /* points into the mapping */
} ct_st_tensor;

typedef struct ct_st_file ct_st_file;

/* Maps path read-only and validates the whole header: JSON object, known dtypes, shapes
   non-negative, data_offsets inside the data area, byte length == elements x dtype size,
   no two tensors overlapping, no duplicate names. CT_ERR_IO if the file cannot be read,
   CT_ERR_FORMAT (message naming the tensor) for any inconsistency. */
ct_status ct_st_open(const char *path, ct_st_file **out, char *err, size_t errcap);

/* Same validation over an in-memory buffer (borrowed; must outlive the handle). */
ct_status ct_st_open_buffer(const void *buf, size_t len, ct_st_file **out, char *err,
                            size_t errcap);

/* Unmaps and frees; NULL is fine. */
void ct_st_close(ct_st_file *f);

/* Number of tensors and access by index (sorted by name). */
size_t ct_st_count(const ct_st_file *f);
const ct_st_tensor *ct_st_at(const ct_st_file *f, size_t i);

/* Tensor by exact name, or NULL. O(log n). */
const ct_st_tensor *ct_st_find(const ct_st_file *f, const char *name);

/* The string value of key in the header's __metadata__ object (borrowed, valid until close);
   NULL when there is no such key or its value is not a string. */
const char *ct_st_meta(const ct_st_file *f, const char *key);

/* Asks for huge pages behind the tensors of f whose names contain one of names[n]: Linux
   MADV_HUGEPAGE over their bytes (ranges less than 2 MiB apart joined), so that the page
   cache read through the mapping from then on comes in 2 MiB folios where the kernel can,
   and later mappings of those folios take 2 MiB pages, which stream faster than 4 KiB ones
   (docs/KERNELS.md "Huge pages for the streamed weights"). Call it before anything reads
   those bytes. Returns the bytes advised: 0 for a buffer, no match, or a refusal. */
size_t ct_st_advise_huge(ct_st_file *f, const char *const *names, int n);

/* Formats a shape as "[a, b, c]" into buf. Returns buf. */
char *ct_st_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap);

#endif
