/* core/fileio: ct_read_file reads a regular file whole and refuses what is not one (a FIFO
   without waiting for a writer, a directory, a file over its limit, a missing path), each with
   its status and a message naming the path; ct_check_regular passes regular and missing paths. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "ct_test.h"

int main(void) {
    char dir[] = "/tmp/ct_fileio_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char reg[256], fifo[256], missing[256], err[512];
    snprintf(reg, sizeof reg, "%s/a.txt", dir);
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    snprintf(missing, sizeof missing, "%s/none", dir);
    FILE *f = fopen(reg, "wb");
    CHECK(f && fputs("hello", f) >= 0 && fclose(f) == 0);
    CHECK(mkfifo(fifo, 0600) == 0);
    /* a FIFO with no writer would block a plain open forever: fail the test instead of hanging */
    alarm(20);

    char *buf = NULL;
    size_t len = 0;
    CHECK(ct_read_file(reg, 64, &buf, &len, err, sizeof err) == CT_OK && len == 5 && buf && !strcmp(buf, "hello"));
    free(buf);
    buf = NULL;
    ct_status st = ct_read_file(reg, 4, &buf, &len, err, sizeof err);
    CHECKF(st == CT_ERR_LIMIT && !buf && strstr(err, reg), "over the limit: %d %s", (int)st, err);

    st = ct_read_file(fifo, 64, &buf, &len, err, sizeof err);
    CHECKF(st == CT_ERR_IO && !buf && len == 0 && strstr(err, fifo) && strstr(err, "not a regular file (a FIFO)"),
           "FIFO: %d %s", (int)st, err);
    st = ct_read_file(dir, 64, &buf, &len, err, sizeof err);
    CHECKF(st == CT_ERR_IO && !buf && strstr(err, "not a regular file (a directory)"), "directory: %d %s", (int)st,
           err);
    st = ct_read_file(missing, 64, &buf, &len, err, sizeof err);
    CHECKF(st == CT_ERR_IO && !buf && strstr(err, "cannot open") && strstr(err, missing), "missing: %d %s", (int)st,
           err);

    CHECK(ct_check_regular(reg, err, sizeof err) == CT_OK);
    CHECK(ct_check_regular(missing, err, sizeof err) == CT_OK); /* the caller's open names that */
    st = ct_check_regular(fifo, err, sizeof err);
    CHECKF(st == CT_ERR_IO && strstr(err, "not a regular file (a FIFO)"), "check FIFO: %d %s", (int)st, err);
    alarm(0);

    unlink(reg);
    unlink(fifo);
    rmdir(dir);
    return ct_test_finish();
}
