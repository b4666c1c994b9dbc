/* The test harness itself (tests/ct_test.h): in a child process, a run with zero checks
   fails, one passing check passes, one failing check fails; ct_test_skip() returns 77 (the
   ctest SKIP_RETURN_CODE) outside CI and fails under CI=true. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"

enum { ZERO, ONE_PASS, ONE_FAIL, PASS_AND_FAIL, SKIP_LOCAL, SKIP_CI };

/* Exit status of a child that resets the counters, does `what`, and exits with the
   harness's code; -1 when the child did not exit normally. */
static int child(int what) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        ct_test_pass = ct_test_fail = 0;
        int rc;
        switch (what) {
        case ZERO: rc = ct_test_finish(); break;
        case ONE_PASS: ct_test_pass++; rc = ct_test_finish(); break;
        case ONE_FAIL: ct_test_fail++; rc = ct_test_finish(); break;
        case PASS_AND_FAIL: ct_test_pass += 5; ct_test_fail++; rc = ct_test_finish(); break;
        case SKIP_LOCAL: unsetenv("CI"); rc = ct_test_skip("self-test"); break;
        default: setenv("CI", "true", 1); rc = ct_test_skip("self-test"); break;
        }
        fflush(NULL);
        _exit(rc);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

int main(void) {
    int rc = child(ZERO);
    CHECKF(rc == 1, "zero checks: exit %d, want 1", rc);
    rc = child(ONE_PASS);
    CHECKF(rc == 0, "one passing check: exit %d, want 0", rc);
    rc = child(ONE_FAIL);
    CHECKF(rc == 1, "one failing check: exit %d, want 1", rc);
    rc = child(PASS_AND_FAIL);
    CHECKF(rc == 1, "passes and a failure: exit %d, want 1", rc);
    rc = child(SKIP_LOCAL);
    CHECKF(rc == CT_TEST_SKIP, "skip outside CI: exit %d, want %d", rc, CT_TEST_SKIP);
    rc = child(SKIP_CI);
    CHECKF(rc == 1, "skip under CI=true: exit %d, want 1", rc);
    setenv("CI", "0", 1);
    CHECK(!ct_test_in_ci());
    setenv("CI", "false", 1);
    CHECK(!ct_test_in_ci());
    setenv("CI", "", 1);
    CHECK(!ct_test_in_ci());
    setenv("CI", "1", 1);
    CHECK(ct_test_in_ci());
    return ct_test_finish();
}
