/* Whole-file reading with explicit limits. */
#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

ct_status ct_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                       size_t errcap) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return ct_errf(err, errcap, CT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((size_t)sb.st_size > max_bytes) {
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_LIMIT, "'%s' is %lld bytes, over the %zu-byte limit", path,
                       (long long)sb.st_size, max_bytes);
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        fclose(f);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t n = fread(buf, 1, (size_t)sb.st_size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n != (size_t)sb.st_size) {
        free(buf);
        return ct_errf(err, errcap, CT_ERR_IO, "short read on '%s'", path);
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return CT_OK;
}

int ct_file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}
