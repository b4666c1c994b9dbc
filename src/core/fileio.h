/* Small file helpers: whole-file reads with a size cap, existence checks. */
#ifndef CT_FILEIO_H
#define CT_FILEIO_H

#include <jansson.h>
#include <stddef.h>

#include "core/status.h"

/* Reads path into a NUL-terminated malloc'd buffer (*out, caller frees). Files larger than
   max_bytes fail with CT_ERR_LIMIT; a path that is not a regular file (a FIFO, a device, a
   directory) fails with CT_ERR_IO "'PATH' is not a regular file (a FIFO)", never waiting on it. */
ct_status ct_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                       size_t errcap);

/* Writes len bytes to path atomically: path.tmp.<pid>, fsync, rename. On failure the temporary
   file is removed and nothing under path changes; CT_ERR_IO names the path and the reason. */
ct_status ct_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                               size_t errcap);

/* Creates the missing parent directories of path (mode 0755), like `mkdir -p $(dirname path)`.
   CT_ERR_IO names the directory that could not be made. */
ct_status ct_mkdir_parents(const char *path, char *err, size_t errcap);

/* 1 if path names an existing regular file. */
int ct_file_exists(const char *path);

/* Refuses a path that exists but is not a regular file (a FIFO, a device, a directory, a
   socket), so that opening it never blocks on a FIFO: CT_ERR_IO with "'PATH' is not a regular
   file (a FIFO)". A missing path passes (the caller's open names that error). */
ct_status ct_check_regular(const char *path, char *err, size_t errcap);

/* What a st_mode names, for those messages: "a directory", "a FIFO", ..., "not a plain file". */
const char *ct_file_kind(unsigned mode);

/* Loads path as a JSON document whose top level is an object into *root (json_decref it): a
   non-regular file is refused as ct_check_regular does; an unreadable path is CT_ERR_IO "cannot
   open PATH: reason", bad JSON CT_ERR_FORMAT "PATH: JSON error at line L column C: what", and
   another top level CT_ERR_FORMAT "PATH: top level is not a JSON object". */
ct_status ct_json_load_object(const char *path, json_t **root, char *err, size_t errcap);

#endif
