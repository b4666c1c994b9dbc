/* Step stats (EDGE.md 6): disabled by default, enabled by CODECTALK_STEP_STATS_DIR (in a child
   process, with the at-exit dump), concurrent adds from several threads, the percentile index
   rule, the reservoir overwrite slot, per-role dumps, the merge of fake dump files with the
   combine rules, attribution order and markdown, and a corrupt dump named in the error. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/stepstats.h"
#include "ct_test.h"

static char g_root[512];

static void rmtree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rmtree(p);
        else remove(p);
    }
    closedir(d);
    rmdir(dir);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* The environment switch, in a child that has never touched the registry: enabled by the
   variable, and the counters reach <dir>/<role>_<pid>.json through the at-exit dump alone. */
static void test_env_child(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/env", g_root);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("CODECTALK_STEP_STATS_DIR", dir, 1);
        if (!ct_stats_enabled()) _exit(3);
        ct_stats_add("core.step_ms", 5.0);
        ct_stats_add("core.step_ms", 7.0);
        exit(0); /* at-exit dump */
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    char path[700];
    snprintf(path, sizeof path, "%s/orchestrator_%ld.json", dir, (long)pid);
    json_error_t je;
    json_t *d = json_load_file(path, 0, &je);
    CHECKF(d != NULL, "%s: %s", path, je.text);
    if (!d) return;
    json_t *c = json_object_get(json_object_get(d, "counters"), "core.step_ms");
    CHECK(json_integer_value(json_object_get(c, "count")) == 2);
    CHECK(json_number_value(json_object_get(c, "sum_ms")) == 12.0);
    CHECK(json_number_value(json_object_get(c, "mean_ms")) == 6.0);
    CHECK(json_integer_value(json_object_get(d, "pid")) == pid);
    CHECK(!strcmp(json_string_value(json_object_get(d, "role")), "orchestrator"));
    CHECK(json_number_value(json_object_get(d, "dumped_at")) >= json_number_value(json_object_get(d, "started_at")));
    json_decref(d);
}

static void test_disabled(void) {
    unsetenv("CODECTALK_STEP_STATS_DIR");
    CHECK(ct_stats_enabled() == 0);
    ct_stats_add("core.step_ms", 1.0);
    ct_stat_summary s;
    CHECK(ct_stats_get(NULL, "core.step_ms", &s) == 0);
    CHECK(strcmp(ct_stats_dir(), "") == 0);
    char err[256];
    CHECK(ct_stats_dump(NULL, err, sizeof err) == CT_ERR_STATE);
    double t0 = CT_STATS_T0();
    CHECK(t0 == 0.0);
    CT_STATS_ADD_SINCE("x.ms", t0);
    CHECK(ct_stats_get(NULL, "x.ms", &s) == 0);
}

typedef struct {
    const char *role;
    int n;
} worker_arg;

static void *worker(void *p) {
    const worker_arg *a = p;
    ct_stats_thread_role(a->role);
    for (int i = 0; i < a->n; i++) {
        ct_stats_add("t.add_ms", 1.0);
        if (i % 4 == 0) ct_stats_add("t.quarter_ms", 2.0);
    }
    return NULL;
}

static void test_threads(void) {
    ct_stats_reset();
    pthread_t th[4];
    worker_arg args[4] = {{"stage0", 10000}, {"stage0", 10000}, {"stage1", 10000}, {"stage1", 7000}};
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    ct_stat_summary s;
    CHECK(ct_stats_get("stage0", "t.add_ms", &s) == 1 && s.count == 20000 && s.sum_ms == 20000.0);
    CHECK(ct_stats_get("stage1", "t.add_ms", &s) == 1 && s.count == 17000 && s.sum_ms == 17000.0);
    CHECK(s.mean_ms == 1.0 && s.p50_ms == 1.0 && s.p95_ms == 1.0 && s.max_ms == 1.0);
    CHECK(ct_stats_get("stage0", "t.quarter_ms", &s) == 1 && s.count == 5000 && s.sum_ms == 10000.0);
    CHECK(ct_stats_get("stage1", "t.quarter_ms", &s) == 1 && s.count == 2500 + 1750);
    CHECK(ct_stats_get(NULL, "t.add_ms", &s) == 0); /* the main thread's role has none */
}

static void test_percentile_rule(void) {
    ct_stats_reset();
    for (int i = 10; i >= 1; i--) ct_stats_add("p.ten_ms", (double)i);
    ct_stat_summary s;
    /* n = 10: p50 index round(4.5) = 4 (ties to even) -> 5; p95 index round(8.55) = 9 -> 10. */
    CHECK(ct_stats_get(NULL, "p.ten_ms", &s) == 1 && s.p50_ms == 5 && s.p95_ms == 10 && s.max_ms == 10);
    CHECK(s.count == 10 && s.sum_ms == 55 && s.mean_ms == 5.5);
    ct_stats_add("p.two_ms", 7);
    ct_stats_add("p.two_ms", 3);
    /* n = 2: index round(0.5) = 0 -> 3; round(0.95) = 1 -> 7. */
    CHECK(ct_stats_get(NULL, "p.two_ms", &s) == 1 && s.p50_ms == 3 && s.p95_ms == 7);
    double v[21];
    for (int i = 0; i < 21; i++) v[i] = 21 - i;
    double p50, p95;
    ct_stats_percentiles(v, 21, &p50, &p95); /* indices 10 and 19 */
    CHECK(p50 == 11 && p95 == 20);
    ct_stats_percentiles(v, 1, &p50, &p95);
    CHECK(p50 == v[0] && p95 == v[0]);
}

static void test_reservoir(void) {
    ct_stats_reset();
    for (int i = 0; i < CT_STATS_RESERVOIR; i++) ct_stats_add("r.ms", 1.0);
    CHECK(ct_stats_sample(NULL, "r.ms", CT_STATS_RESERVOIR - 1) == 1.0);
    ct_stats_add("r.ms", 99.0); /* count 20001: slot 20001 * 7919 mod 20000 = 7919 */
    CHECK(ct_stats_sample(NULL, "r.ms", 7919) == 99.0);
    CHECK(ct_stats_sample(NULL, "r.ms", 7918) == 1.0 && ct_stats_sample(NULL, "r.ms", 0) == 1.0);
    ct_stats_add("r.ms", 55.0); /* count 20002: slot 2 * 7919 = 15838 */
    CHECK(ct_stats_sample(NULL, "r.ms", 15838) == 55.0);
    CHECK(isnan(ct_stats_sample(NULL, "r.ms", CT_STATS_RESERVOIR)) && isnan(ct_stats_sample(NULL, "nope", 0)));
    ct_stat_summary s;
    CHECK(ct_stats_get(NULL, "r.ms", &s) == 1 && s.count == 20002 && s.max_ms == 99.0 && s.sum_ms == 20154.0);
    CHECK(s.p50_ms == 1.0);
}

static void test_dump(const char *dir) {
    ct_stats_reset();
    ct_stats_thread_role("stage0");
    ct_stats_add("core.step_ms", 10);
    ct_stats_add("core.step_ms", 30);
    ct_stats_thread_role("stage1");
    ct_stats_add("codec.decode_ms", 4);
    ct_stats_thread_role(NULL);
    char err[256];
    CHECKF(ct_stats_dump("stage1", err, sizeof err) == CT_OK, "%s", err);
    char p0[700], p1[700];
    snprintf(p0, sizeof p0, "%s/stage0_%ld.json", dir, (long)getpid());
    snprintf(p1, sizeof p1, "%s/stage1_%ld.json", dir, (long)getpid());
    CHECK(!file_exists(p0) && file_exists(p1));
    CHECKF(ct_stats_dump(NULL, err, sizeof err) == CT_OK, "%s", err);
    CHECK(file_exists(p0));
    json_t *d = json_load_file(p0, 0, NULL);
    CHECK(d != NULL);
    json_t *c = json_object_get(json_object_get(d, "counters"), "core.step_ms");
    CHECK(json_integer_value(json_object_get(c, "count")) == 2 && json_number_value(json_object_get(c, "mean_ms")) == 20);
    CHECK(json_number_value(json_object_get(c, "p50_ms")) == 10 && json_number_value(json_object_get(c, "p95_ms")) == 30);
    json_decref(d);

    json_t *snap = ct_stats_snapshot();
    CHECK(snap && json_object_get(json_object_get(snap, "roles"), "stage1"));
    json_t *a0 = json_array_get(json_object_get(snap, "attribution"), 0);
    CHECK(a0 && !strcmp(json_string_value(json_object_get(a0, "counter")), "core.step_ms"));
    CHECK(a0 && json_number_value(json_object_get(a0, "share_of_frame")) == 0.25);
    json_decref(snap);

    json_t *merged = NULL;
    int nf = 0;
    CHECK(ct_stats_merge_dir(dir, &merged, &nf, err, sizeof err) == CT_OK && nf == 2);
    json_decref(merged);
}

static const char D1[] = "{\"role\": \"stage0\", \"pid\": 1, \"started_at\": 1.0, \"dumped_at\": 2.0, \"counters\": {"
                         "\"core.step_ms\": {\"count\": 10, \"sum_ms\": 100.0, \"mean_ms\": 10.0, \"p50_ms\": 9.0,"
                         " \"p95_ms\": 15.0, \"max_ms\": 20.0}}}";
static const char D2[] = "{\"role\": \"stage0\", \"pid\": 2, \"started_at\": 1.0, \"dumped_at\": 2.0, \"counters\": {"
                         "\"core.step_ms\": {\"count\": 30, \"sum_ms\": 600, \"mean_ms\": 20, \"p50_ms\": 19,"
                         " \"p95_ms\": 25, \"max_ms\": 40},"
                         "\"sched.schedule_ms\": {\"count\": 5, \"sum_ms\": 1.2, \"mean_ms\": 0.24, \"p50_ms\": 0.2,"
                         " \"p95_ms\": 0.3, \"max_ms\": 0.4}}}";
static const char D3[] = "{\"role\": \"stage1\", \"pid\": 3, \"started_at\": 1.0, \"dumped_at\": 2.0, \"counters\": {"
                         "\"codec.decode_ms\": {\"count\": 4, \"sum_ms\": 40, \"mean_ms\": 10, \"p50_ms\": 9,"
                         " \"p95_ms\": 12, \"max_ms\": 13}}}";

static void check_good_merge(const json_t *m) {
    json_t *st = json_object_get(json_object_get(json_object_get(m, "roles"), "stage0"), "core.step_ms");
    CHECK(json_integer_value(json_object_get(st, "count")) == 40);
    CHECK(json_number_value(json_object_get(st, "sum_ms")) == 700);
    CHECK(json_number_value(json_object_get(st, "mean_ms")) == 17.5);
    CHECK(json_number_value(json_object_get(st, "p50_ms")) == 19); /* max of the files' p50 */
    CHECK(json_number_value(json_object_get(st, "p95_ms")) == 25);
    CHECK(json_number_value(json_object_get(st, "max_ms")) == 40);
    json_t *att = json_object_get(m, "attribution");
    CHECK(json_array_size(att) == 3);
    const char *order[] = {"core.step_ms", "codec.decode_ms", "sched.schedule_ms"};
    for (size_t i = 0; i < 3 && i < json_array_size(att); i++)
        CHECKF(!strcmp(json_string_value(json_object_get(json_array_get(att, i), "counter")), order[i]), "row %zu", i);
    json_t *r0 = json_array_get(att, 0);
    CHECK(!strcmp(json_string_value(json_object_get(r0, "role")), "stage0"));
    CHECK(json_number_value(json_object_get(r0, "share_of_frame")) == 17.5 / 80);
    CHECK(json_integer_value(json_object_get(r0, "count")) == 40);
}

static void test_merge(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/merge", g_root);
    mkdir(dir, 0755);
    write_text(dir, "stage0_1.json", D1);
    write_text(dir, "stage0_2.json", D2);
    write_text(dir, "stage1_3.json", D3);
    write_text(dir, "stage1_4.json.tmp.4", "{ partial"); /* an unfinished atomic write: ignored */
    write_text(dir, "notes.txt", "not a dump");
    json_t *m = NULL;
    int nf = -1;
    char err[512];
    CHECKF(ct_stats_merge_dir(dir, &m, &nf, err, sizeof err) == CT_OK, "%s", err);
    CHECK(m && nf == 3);
    if (m) check_good_merge(m);
    char *md = m ? ct_stats_markdown(m, 0) : NULL;
    CHECK(md != NULL);
    if (md) {
        CHECK(!strncmp(md, "role | counter | n | mean ms | p95 ms | share of 80 ms\n", 55));
        CHECK(strstr(md, "\nstage0 | core.step_ms | 40 | 17.50 | 25.00 | 21.9%\n") != NULL);
        CHECK(strstr(md, "\nstage1 | codec.decode_ms | 4 | 10.00 | 12.00 | 12.5%\n") != NULL);
        CHECK(strstr(md, "\nstage0 | sched.schedule_ms | 5 | 0.24 | 0.30 | 0.3%\n") != NULL);
    }
    free(md);
    md = m ? ct_stats_markdown(m, 1) : NULL;
    CHECK(md && strstr(md, "core.step_ms") && !strstr(md, "codec.decode_ms"));
    free(md);
    json_decref(m);

    /* A truncated dump: named in the error, the good files still merged. */
    write_text(dir, "stage1_9.json", "{\"role\": \"stage1\", \"counters\": {\"codec.decode_ms\": {\"count\": 4,");
    m = NULL;
    CHECK(ct_stats_merge_dir(dir, &m, &nf, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "stage1_9.json") && strstr(err, "invalid JSON") && strstr(err, "1 of 4"), "%s", err);
    CHECK(m && nf == 3);
    if (m) check_good_merge(m);
    json_decref(m);
    /* A well-formed file with a broken counter: the counter and key are named. */
    write_text(dir, "stage1_9.json", "{\"role\": \"stage1\", \"counters\": {\"codec.decode_ms\": {\"count\": 4, "
                                     "\"sum_ms\": 1, \"p50_ms\": 1, \"max_ms\": 1}}}");
    CHECK(ct_stats_merge_dir(dir, &m, &nf, err, sizeof err) == CT_ERR_FORMAT);
    CHECKF(strstr(err, "stage1_9.json") && strstr(err, "'codec.decode_ms'") && strstr(err, "'p95_ms'"), "%s", err);
    json_decref(m);
    write_text(dir, "stage1_9.json", "[1, 2]");
    CHECK(ct_stats_merge_dir(dir, &m, &nf, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "not a JSON object"));
    json_decref(m);
    write_text(dir, "stage1_9.json", "{\"role\": \"\", \"counters\": {}}");
    CHECK(ct_stats_merge_dir(dir, &m, &nf, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "'role'"));
    json_decref(m);

    /* Missing directory: CT_ERR_IO naming it, no result. */
    char missing[700];
    snprintf(missing, sizeof missing, "%s/nope", g_root);
    m = (json_t *)1;
    CHECK(ct_stats_merge_dir(missing, &m, &nf, err, sizeof err) == CT_ERR_IO && m == NULL && strstr(err, missing));
    /* Empty directory: OK, nothing merged. */
    char empty[700];
    snprintf(empty, sizeof empty, "%s/empty", g_root);
    mkdir(empty, 0755);
    CHECK(ct_stats_merge_dir(empty, &m, &nf, err, sizeof err) == CT_OK && nf == 0 &&
          json_array_size(json_object_get(m, "attribution")) == 0);
    json_decref(m);

    /* In-memory merge with one unparsed entry. */
    json_t *d[3] = {json_loads(D1, 0, NULL), NULL, json_loads(D2, 0, NULL)};
    const char *names[3] = {"a", "b", "c"};
    CHECK(ct_stats_merge(d, names, 3, &m, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "b: could not be parsed"));
    CHECK(m && json_integer_value(json_object_get(
                   json_object_get(json_object_get(json_object_get(m, "roles"), "stage0"), "core.step_ms"), "count")) == 40);
    json_decref(m);
    json_decref(d[0]);
    json_decref(d[2]);
}

int main(void) {
    snprintf(g_root, sizeof g_root, "%s/test_stepstats_%ld", CT_BIN_DIR, (long)getpid());
    rmtree(g_root);
    CHECK(mkdir(g_root, 0755) == 0);
    test_env_child();
    test_disabled();
    char dir[600], err[256];
    snprintf(dir, sizeof dir, "%s/live", g_root);
    CHECK(ct_stats_configure(dir, err, sizeof err) == CT_OK && ct_stats_enabled() == 1);
    CHECK(strcmp(ct_stats_dir(), dir) == 0);
    test_threads();
    test_percentile_rule();
    test_reservoir();
    rmtree(dir); /* the periodic dumps of the tests above */
    test_dump(dir);
    test_merge();
    CHECK(ct_stats_configure(NULL, err, sizeof err) == CT_OK && !ct_stats_enabled());
    ct_stats_reset();
    ct_stat_summary s;
    ct_stats_add("after.ms", 1);
    CHECK(ct_stats_get(NULL, "after.ms", &s) == 0);
    int rc = ct_test_finish();
    rmtree(g_root);
    return rc;
}
