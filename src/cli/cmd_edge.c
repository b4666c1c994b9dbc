/* `codectalk probe`, `codectalk profile` and `codectalk calibrate`: thin wrappers printing the
   hardware probe, the materialised layered profile and the chunk calibration. */
#include "cli/cmd_edge.h"
#include "codectalk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/cli_common.h"
#include "codec/codec.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "edge/calibrate.h"
#include "edge/derive.h"
#include "edge/probe.h"
#include "edge/profile.h"
#include "kernels/cpu.h"

static double gib(uint64_t b) { return (double)b / (double)CT_GIB; }

static void print_hw(const ct_hw_profile *p) {
    printf("source:        %s\n", p->source);
    printf("class:         %s (engine class %s: the settings this CPU engine derives)\n",
           ct_hw_class_name(ct_hw_classify(p)), ct_hw_class_name(ct_hw_engine_class(p)));
    printf("arch:          %s (%s)\n", p->arch, p->host_os);
    printf("cpu:           %s\n", p->cpu_model[0] ? p->cpu_model : "(unknown)");
    printf("flags:        ");
    for (int f = 0; f < CT_HWF_COUNT; f++)
        if (p->flags & CT_HWF_BIT(f)) printf(" %s", ct_hw_flag_name((ct_hw_flag)f));
    printf("\ncpus:          %d logical, %d physical, %d NUMA node(s)\n", p->n_logical, p->n_physical,
           p->numa_nodes);
    for (int c = 0; c < p->n_clusters; c++) {
        char r[512];
        ct_cpu_range_str(p->clusters[c].cpus, p->clusters[c].n_cpus, r, sizeof r);
        printf("cluster %d:     %u MHz  cpus %s%s\n", c, p->clusters[c].max_khz / 1000, r,
               c == 0 ? "  (big)" : "");
    }
    printf("memory:        %.2f GiB total, %.2f GiB available\n", gib(p->ram_total_bytes),
           gib(p->ram_available_bytes));
    char al[512] = "all";
    if (p->n_allowed_cpus) ct_cpu_range_str(p->allowed_cpus, p->n_allowed_cpus, al, sizeof al);
    printf("container:     cpus allowed %s; cgroup quota ", al);
    if (p->cgroup_cpus > 0) printf("%.2f CPUs", p->cgroup_cpus);
    else printf("none");
    if (p->cgroup_mem_limit_bytes) printf(", memory limit %.2f GiB", gib(p->cgroup_mem_limit_bytes));
    printf("; usable RAM %.2f GiB\n", gib(ct_hw_usable_ram(p)));
    printf("accelerator:   %s", p->accelerator);
    if (p->gpu_name[0] || p->gpu_mem_bytes)
        printf(" (%s, %.2f GiB, %d SMs, cc %d.%d)", p->gpu_name[0] ? p->gpu_name : "?",
               gib(p->gpu_mem_bytes), p->gpu_sm_count, p->gpu_capability[0], p->gpu_capability[1]);
    printf("\nbf16 / fp16:   %s / %s\n", p->supports_bf16 ? "yes" : "no", p->supports_fp16 ? "yes" : "no");
    printf("thermal zones: %d\n", p->thermal_zones);
    if (p->notes[0]) printf("notes:         %s\n", p->notes);
}

static void print_derived(const ct_derived *d) {
    char cpus[512];
    printf("derived (engine class %s):\n", ct_hw_class_name(d->cls));
    printf("  pool %.2f GiB, weights %.2f GiB, activations %.2f GiB, headroom %.2f GiB, budget %.2f GiB\n",
           gib(d->pool_bytes), gib(d->weights_bytes), gib(d->activation_bytes), gib(d->headroom_bytes),
           gib(d->budget_bytes));
    printf("  f32 KV %llu B/token, %llu B/stream at context %d: %d stream(s) fit, KV budget %llu B\n",
           (unsigned long long)d->kv_bytes_per_token, (unsigned long long)d->per_seq_bytes, d->max_context,
           d->max_streams_mem, (unsigned long long)d->kv_budget_bytes);
    printf("  usable cpus '%s'; adaptive chunks min %d frames, margin %d ms\n",
           ct_cpu_range_str(d->cpus, d->n_cpus, cpus, sizeof cpus), d->chunk_min_frames, d->chunk_margin_ms);
}

static int model_inputs(const char *model, ct_derive_in *in) {
    if (!model) return 0;
    char err[512];
    if (ct_model_weights_bytes(model, &in->weights_bytes, err, sizeof err) != CT_OK ||
        ct_model_kv_geometry(model, &in->kv, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    return 0;
}

int ct_cli_probe(int argc, char **argv) {
    int json = 0, derive = 0;
    const char *root = NULL, *model = NULL;
    const ct_opt opts[] = {
        {"json", 0, CT_OPT_FLAG, &json, NULL, "print the profile as JSON"},
        {"root", 0, CT_OPT_STR, &root, "DIR", "probe a captured snapshot tree instead of /"},
        {"derive", 0, CT_OPT_FLAG, &derive, NULL, "also print the derived overrides"},
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory for --derive (weights, KV geometry)"},
        {NULL, 0, CT_OPT_FLAG, NULL, NULL, NULL},
    };
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk probe [--json] [--root DIR] [--derive [-m DIR]]");
    if (r) return r > 0 ? 0 : 2;
    ct_hw_profile hw;
    char err[512];
    if (ct_hw_detect(root, &hw, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    ct_derive_in in = {0, {0, 0, 0}, 0};
    if (derive && model_inputs(model, &in) != 0) return 1;
    ct_derived d;
    ct_derive(&hw, &in, &d);
    if (json) {
        char *s = ct_hw_to_json(&hw, 1);
        if (!s) return 1;
        printf("%s\n", s);
        free(s);
    } else {
        print_hw(&hw);
    }
    if (derive) print_derived(&d);
    return 0;
}

/* Moves every "--set K=V" out of argv into sets; returns the remaining argc. */
static int take_sets(int argc, char **argv, const char **sets, int cap, int *n_sets) {
    int out = 0;
    *n_sets = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && *n_sets < cap) {
            sets[(*n_sets)++] = argv[++i];
            continue;
        }
        argv[out++] = argv[i];
    }
    return out;
}

/* The cost model's table (--explain): every format combination, predicted and measured. */
static void explain_plan(const ct_auto_report *r, char *out, size_t cap) {
    const ct_plan *pl = &r->plan;
    const ct_machine *m = &r->machine;
    size_t u = (size_t)snprintf(out, cap,
                                "cost model: machine %s: read %.1f/%.1f GB/s (1/%d threads, %llu MiB), FMA %.0f/%.0f "
                                "GFLOP/s, prompts bf16 %s %.0f, int8 %s %.0f, int4 %s %.0f Gop/s (%d threads); codec %.2f "
                                "GFLOP/frame; target RTF %.2f on %d CPU(s)\n"
                                "| talker/predictor | placement | talker ms | predictor ms | codec ms | frame ms "
                                "| RTF | streams | used |\n",
                                m->source, m->gbs_1t[m->n_sizes - 1], m->gbs_nt[m->n_sizes - 1], m->n_threads,
                                (unsigned long long)(m->bytes[m->n_sizes - 1] >> 20), m->fma_1t, m->fma_nt,
                                m->prompt_op[CT_WF_BF16], m->prompt_nt[CT_WF_BF16], m->prompt_op[CT_WF_INT8],
                                m->prompt_nt[CT_WF_INT8], m->prompt_op[CT_WF_INT4], m->prompt_nt[CT_WF_INT4],
                                m->n_threads, 2e-9 * r->shape.codec_macs, pl->target_rtf, pl->n_cpus);
    for (int i = 0; i < CT_PLAN_OPTIONS && u < cap; i++) {
        const ct_plan_option *o = &pl->opt[i];
        char place[32];
        if (o->cfg.serial) snprintf(place, sizeof place, "serial %d", o->cfg.talker_threads);
        else snprintf(place, sizeof place, "overlapped %d+%d", o->cfg.talker_threads, o->cfg.codec_threads);
        const ct_cost *p = &o->predicted;
        u += (size_t)snprintf(out + u, cap - u, "| %s/%s | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %d | %s%s |\n",
                              ct_wformat_name(o->talker_fmt), ct_wformat_name(o->pred_fmt), place, p->talker_ms,
                              p->predictor_ms, p->codec_ms, p->frame_ms, p->rtf, o->max_streams,
                              o->measured ? "" : "predicted", i == pl->chosen ? " <- chosen" : "");
        if (o->measured && u < cap) {
            const ct_cal_run *k = &o->run;
            char mplace[32];
            if (k->serial) snprintf(mplace, sizeof mplace, "serial %d", k->talker_threads);
            else snprintf(mplace, sizeof mplace, "overlapped %d+%d", k->talker_threads, k->codec_threads);
            u += (size_t)snprintf(out + u, cap - u,
                                  "| %s/%s measured | %s | %.1f (pred %+.0f%%) | %.1f (pred %+.0f%%) | %.1f (pred "
                                  "%+.0f%%) | %.1f (pred %+.0f%%) | %.2f | | measured |\n",
                                  ct_wformat_name(o->talker_fmt), ct_wformat_name(o->pred_fmt), mplace, k->talker_ms,
                                  100 * (p->talker_ms / (k->talker_ms > 0 ? k->talker_ms : 1) - 1), k->predictor_ms,
                                  100 * (p->predictor_ms / (k->predictor_ms > 0 ? k->predictor_ms : 1) - 1),
                                  k->codec_ms, 100 * (p->codec_ms / (k->codec_ms > 0 ? k->codec_ms : 1) - 1),
                                  k->frame_ms, 100 * (p->frame_ms / k->frame_ms - 1), k->frame_ms / CT_FRAME_MS);
        }
    }
    if (u < cap)
        snprintf(out + u, cap - u, "%s", pl->realtime ? "" : "no combination reaches the target: the fastest is used\n");
}

int ct_cli_profile(int argc, char **argv) {
    int autom = 0, explain = 0, max_cpus = 0, no_cal = 0, no_measure = 0;
    float target = 0.85f;
    const char *model = NULL, *out = NULL, *root = NULL, *pdir = NULL, *cache = NULL, *user = NULL;
    const char *sets[64], *set_help = NULL;
    int n_sets = 0;
    argc = take_sets(argc, argv, sets, 64, &n_sets);
    const ct_opt opts[] = {
        {"auto", 0, CT_OPT_FLAG, &autom, NULL, "derive the profile for this machine (layer chain + cost model)"},
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory (weights, shape, codec, id)"},
        {"explain", 0, CT_OPT_FLAG, &explain, NULL,
         "comment every value with the layer that set it; the cost model per format and stage, predicted vs "
         "measured"},
        {"out", 'o', CT_OPT_STR, &out, "FILE", "write the YAML here instead of stdout"},
        {"profile", 0, CT_OPT_STR, &user, "FILE", "user profile: top layer with --auto, else the whole profile"},
        {"root", 0, CT_OPT_STR, &root, "DIR", "probe a snapshot tree instead of this machine"},
        {"profiles-dir", 0, CT_OPT_STR, &pdir, "DIR", "directory holding qwen3_tts.yaml and hardware/"},
        {"cache-dir", 0, CT_OPT_STR, &cache, "DIR", "cache root (default $XDG_CACHE_HOME/codectalk)"},
        {"max-cpus", 0, CT_OPT_INT, &max_cpus, "N", "use at most N of the usable CPUs"},
        {"no-calibration", 0, CT_OPT_FLAG, &no_cal, NULL, "ignore the calibration cache"},
        {"no-measure", 0, CT_OPT_FLAG, &no_measure, NULL, "no roofline run: the cost model uses the probe's figures"},
        {"target-rtf", 0, CT_OPT_FLOAT, &target, "X", "real-time target the formats are chosen for (default 0.85)"},
        {"set", 0, CT_OPT_STR, &set_help, "KEY=VALUE", "override one key (repeatable; last layer)"},
        {NULL, 0, CT_OPT_FLAG, NULL, NULL, NULL},
    };
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk profile --auto [-m DIR] [--explain] [--out FILE] [--set KEY=VALUE]...\n"
                          "       codectalk profile --profile FILE [--set KEY=VALUE]...");
    if (r) return r > 0 ? 0 : 2;
    if (!autom && !user) {
        fprintf(stderr, "error: give --auto or --profile FILE (see --help)\n");
        return 2;
    }
    if (!(target > 0.05f && target <= 10.0f)) {
        fprintf(stderr, "error: --target-rtf must be in (0.05, 10]\n");
        return 2;
    }
    ct_auto_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.profiles_dir = pdir;
    ao.model_dir = model;
    ao.probe_root = root;
    ao.cache_dir = cache;
    ao.user_file = autom ? user : NULL;
    ao.sets = sets;
    ao.n_sets = n_sets;
    ao.max_cpus = max_cpus;
    ao.no_calibration = no_cal;
    ao.no_measure = no_measure;
    ao.target_rtf = target;
    ct_profile *p = malloc(sizeof *p);
    ct_auto_report *rep = malloc(sizeof *rep);
    char err[1024];
    int rc = 1;
    char *yaml = NULL, *header = malloc(16384);
    if (!p || !rep || !header) goto done;
    ct_status st;
    header[0] = 0;
    if (autom) {
        st = ct_profile_auto(&ao, p, rep, err, sizeof err);
        if (st == CT_OK) {
            const ct_hw_profile *h = &rep->hw;
            int cals = 0;
            for (int i = 0; i < CT_PLAN_OPTIONS; i++) cals += rep->have_calibration[i];
            size_t u = (size_t)snprintf(
                header, 16384,
                "codectalk profile --auto: model %s, engine class %s (hardware %s), fingerprint %s\n"
                "hardware: %s, %s, %d logical / %d physical CPUs, %.2f GiB RAM, accelerator %s\n"
                "%s\n%s\n"
                "layers: builtin -> %s%s -> %s%s -> derived -> %s -> calibration (%d format(s) cached) -> user %s "
                "-> flags (%d)%s%s%s%s\n",
                rep->model_id, ct_hw_class_name(rep->derived.cls), ct_hw_class_name(ct_hw_classify(h)),
                rep->fingerprint, h->source, h->cpu_model[0] ? h->cpu_model : "unknown cpu", h->n_logical,
                h->n_physical, gib(h->ram_total_bytes), h->accelerator, rep->derived.notes[0], rep->derived.notes[1],
                rep->base_path, ct_file_exists(rep->base_path) ? "" : " (missing)", rep->hw_overlay_path,
                rep->hw_overlay_found ? "" : " (none)", rep->have_plan ? "cost model" : "no cost model (no -m)",
                cals, user ? user : "(none)", n_sets, h->notes[0] ? "\nprobe notes: " : "", h->notes,
                rep->warnings[0] ? "\nwarnings: " : "", rep->warnings);
            if (rep->have_plan && u < 16384) explain_plan(rep, header + u, 16384 - u);
        }
    } else {
        st = ct_profile_resolve(user, &ao, p, NULL, err, sizeof err);
        snprintf(header, 16384, "codectalk profile --profile %s", user);
    }
    if (st != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (autom && rep->warnings[0]) fprintf(stderr, "warning: %s\n", rep->warnings);
    yaml = ct_profile_to_yaml(p, explain, explain ? header : NULL);
    if (!yaml) goto done;
    if (out) {
        FILE *f = fopen(out, "wb");
        if (!f || fputs(yaml, f) == EOF) {
            fprintf(stderr, "error: cannot write '%s'\n", out);
            if (f) fclose(f);
            goto done;
        }
        if (fclose(f) != 0) {
            fprintf(stderr, "error: cannot write '%s'\n", out);
            goto done;
        }
    } else {
        fputs(yaml, stdout);
    }
    rc = 0;
done:
    free(yaml);
    free(header);
    free(p);
    free(rep);
    return rc;
}

/* One measured placement of a format combination: a warmed-up engine, one request of `frames`
   frames with the adaptive schedule the profile deploys (the codec's cost depends on its chunk
   sizes); the run's per-frame stage costs and the chunk timeline. */
static int measure_run(ct_model *m, ct_codec *c, const ct_cost_cfg *cfg, int frames, ct_cal_run *run,
                       ct_chunk_rec **chunks, int *nc) {
    char err[1024];
    ct_engine *e = NULL;
    ct_engine_params ep = ct_engine_params_default();
    ep.placement = cfg->serial ? CT_PLACEMENT_SERIAL : CT_PLACEMENT_OVERLAPPED;
    ep.talker_threads = cfg->talker_threads;
    ep.codec_threads = cfg->serial ? 1 : cfg->codec_threads;
    ep.warmup = 1;
    if (ct_engine_create(m, c, &ep, &e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    while (ct_engine_ready(e, err, sizeof err) == 0) nanosleep(&(struct timespec){0, 5000000}, NULL);
    ct_gen_params g = ct_gen_params_default();
    g.text = "Calibration request: a sentence of ordinary length, spoken at an even pace.";
    if (ct_model_get_info(m).n_speakers) g.speaker = ct_model_speaker(m, 0);
    if (strcmp(ct_model_get_info(m).kind, "voice_design") == 0) g.instruct = "A calm voice.";
    g.max_frames = frames;
    g.min_new_tokens = frames;
    ct_stream_params sp = ct_stream_params_default();
    sp.schedule = "adaptive";
    ct_stream_info in;
    int rc = ct_cli_run_stream(e, &g, &sp, "measured request", chunks, nc, &in);
    ct_engine_free(e);
    if (rc != 0) return -1;
    int f = in.frames > 1 ? in.frames : 2;
    *run = (ct_cal_run){cfg->serial, cfg->talker_threads, cfg->serial ? 0 : cfg->codec_threads, in.talker_ms / f,
                        in.predictor_ms / f, in.codec_ms / f, (in.done_ms - in.first_frame_ms) / (f - 1),
                        in.prompt_len > in.prompt_reused ? in.prefill_ms / (in.prompt_len - in.prompt_reused) : 0};
    return 0;
}

/* "T/P[,T/P...]", "all" or "chosen" into a mask of plan options. */
static int parse_formats(const char *s, int chosen, int *mask) {
    *mask = 0;
    if (!s || !strcmp(s, "chosen")) {
        *mask = 1 << chosen;
        return 0;
    }
    if (!strcmp(s, "all")) {
        *mask = (1 << CT_PLAN_OPTIONS) - 1;
        return 0;
    }
    const char *q = s;
    while (*q) {
        const char *e = strchr(q, ',');
        size_t l = e ? (size_t)(e - q) : strlen(q);
        int hit = -1;
        for (int i = 0; i < CT_PLAN_OPTIONS; i++) {
            int tf, pf;
            ct_plan_formats(i, &tf, &pf);
            char name[32];
            snprintf(name, sizeof name, "%s/%s", ct_wformat_name(tf), ct_wformat_name(pf));
            if (strlen(name) == l && !strncmp(name, q, l)) hit = i;
        }
        if (hit < 0) {
            fprintf(stderr, "error: --formats '%s': '%.*s' is not one of bf16/bf16, int8/int8, int8/int4, int4/int4 "
                    "(or all, chosen)\n", s, (int)l, q);
            return -1;
        }
        *mask |= 1 << hit;
        q += l + (e ? 1 : 0);
    }
    return 0;
}

int ct_cli_calibrate(int argc, char **argv) {
    int json = 0, dry = 0, frames = 40;
    const char *model = NULL, *timeline = NULL, *root = NULL, *cache = NULL, *formats = NULL;
    const ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory (its id enters the fingerprint)"},
        {"formats", 0, CT_OPT_STR, &formats, "LIST",
         "weight formats to measure: chosen (default: what the cost model picks), all, or T/P,... "
         "(bf16/bf16, int8/int8, int8/int4, int4/int4)"},
        {"frames", 0, CT_OPT_INT, &frames, "N", "frames per measured request (default 40)"},
        {"timeline", 0, CT_OPT_STR, &timeline, "FILE",
         "a recorded chunk timeline JSON {sample_rate, chunks:[{t_ms, samples}]} instead of measuring: the "
         "schedule only, for one format combination"},
        {"root", 0, CT_OPT_STR, &root, "DIR", "fingerprint a snapshot tree instead of this machine"},
        {"cache-dir", 0, CT_OPT_STR, &cache, "DIR", "cache root (default $XDG_CACHE_HOME/codectalk)"},
        {"json", 0, CT_OPT_FLAG, &json, NULL, "print each calibration as JSON"},
        {"dry-run", 0, CT_OPT_FLAG, &dry, NULL, "do not write the cache"},
        {NULL, 0, CT_OPT_FLAG, NULL, NULL, NULL},
    };
    int r = ct_args_parse(argc, argv, opts,
                          "usage: codectalk calibrate -m DIR [--formats chosen|all|T/P,...] [--frames N] [--json] "
                          "[--dry-run]\n"
                          "Measures each format combination on the stream engine (serial and overlapped\n"
                          "placements), caches the per-stage costs and the chunk schedule per hardware\n"
                          "fingerprint + model + formats + engine version; `--profile auto` then uses them.");
    if (r) return r > 0 ? 0 : 2;
    if (!model) {
        fprintf(stderr, "error: -m DIR is required (the calibration is per model)\n");
        return 2;
    }
    if (frames < 4 || frames > 2000) {
        fprintf(stderr, "error: --frames must be in [4, 2000]\n");
        return 2;
    }
    char err[1024];
    ct_codec *codec = NULL;
    ct_profile *p = malloc(sizeof *p);
    ct_auto_report *rep = malloc(sizeof *rep);
    int rc = 1;
    if (!p || !rep) goto done;
    if (!timeline && ct_codec_load(model, &codec, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    /* the prediction alone decides what "chosen" is and which placements to try */
    ct_auto_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.model_dir = model;
    ao.probe_root = root;
    ao.cache_dir = cache;
    ao.no_calibration = 1;
    ao.codec_macs = codec ? ct_codec_macs_per_frame(codec) : 0;
    if (ct_profile_auto(&ao, p, rep, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    if (rep->warnings[0]) fprintf(stderr, "warning: %s\n", rep->warnings);
    int mask;
    if (parse_formats(formats, rep->plan.chosen, &mask) != 0) {
        rc = 2;
        goto done;
    }
    if (timeline && (mask & (mask - 1))) {
        fprintf(stderr, "error: --timeline calibrates one format combination; name it with --formats T/P\n");
        rc = 2;
        goto done;
    }
    printf("model %s, engine class %s, fingerprint %s, %d usable CPU(s)\n", rep->model_id,
           ct_hw_class_name(rep->derived.cls), rep->fingerprint, rep->plan.n_cpus);
    if (!json && !timeline)
        printf("| talker/predictor | placement | talker ms | predictor ms | codec ms | frame ms (predicted) | "
               "prefill ms/token |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < CT_PLAN_OPTIONS; i++) {
        if (!(mask & (1 << i))) continue;
        const ct_plan_option *o = &rep->plan.opt[i];
        ct_calibration cal;
        memset(&cal, 0, sizeof cal);
        ct_chunk_rec *chunks = NULL;
        int nc = 0, sr = 24000;
        if (timeline) {
            char *buf = NULL;
            size_t n = 0;
            if (ct_read_file(timeline, 64u << 20, &buf, &n, err, sizeof err) != CT_OK ||
                ct_cal_parse_timeline(buf, n, timeline, &chunks, &nc, &sr, err, sizeof err) != CT_OK) {
                free(buf);
                fprintf(stderr, "error: %s\n", err);
                goto done;
            }
            free(buf);
            ct_cal_from_timeline(chunks, nc, sr, &cal);
        } else {
            ct_model_params mp = ct_model_params_default();
            mp.talker_weights = ct_wformat_name(o->talker_fmt);
            mp.predictor_weights = ct_wformat_name(o->pred_fmt);
            ct_model *m = ct_cli_load_model_p(model, &mp);
            if (!m) goto done;
            sr = ct_codec_sample_rate(codec);
            /* the plan's placement, and the other kind: serial on every CPU / the best overlapped split */
            ct_cost_cfg cfgs[2] = {o->cfg, o->cfg};
            int ncfg = 1, n = rep->plan.n_cpus;
            if (o->cfg.serial && n >= 2) {
                cfgs[1].serial = 0;
                cfgs[1].talker_threads = n - 1;
                cfgs[1].codec_threads = 1;
                ncfg = 2;
            } else if (!o->cfg.serial) {
                cfgs[1].serial = 1;
                cfgs[1].talker_threads = n;
                cfgs[1].codec_threads = 0;
                ncfg = 2;
            }
            ct_chunk_rec *best_chunks = NULL;
            int best_nc = 0;
            for (int k = 0; k < ncfg; k++) {
                ct_cal_run run;
                if (measure_run(m, codec, &cfgs[k], frames, &run, &chunks, &nc) != 0) {
                    ct_model_free(m);
                    free(best_chunks);
                    goto done;
                }
                cal.runs[cal.n_runs++] = run;
                ct_cost pc;
                ct_cost_predict(&rep->machine, &rep->shape, NULL, &cfgs[k], &pc);
                if (!json) {
                    char place[32];
                    if (run.serial) snprintf(place, sizeof place, "serial %d", run.talker_threads);
                    else snprintf(place, sizeof place, "overlapped %d+%d", run.talker_threads, run.codec_threads);
                    printf("| %s/%s | %s | %.1f (pred. %.1f) | %.1f (pred. %.1f) | %.1f (pred. %.1f) | %.1f (%.1f) | "
                           "%.2f (pred. %.2f) |\n",
                           ct_wformat_name(o->talker_fmt), ct_wformat_name(o->pred_fmt), place, run.talker_ms,
                           pc.talker_ms, run.predictor_ms, pc.predictor_ms, run.codec_ms, pc.codec_ms, run.frame_ms,
                           pc.frame_ms, run.prefill_ms_per_token, pc.prefill_ms_per_token);
                }
                if (!best_chunks || run.frame_ms <= ct_cal_best_run(&cal)->frame_ms) {
                    free(best_chunks);
                    best_chunks = chunks;
                    best_nc = nc;
                } else {
                    free(chunks);
                }
                chunks = NULL;
            }
            ct_model_free(m);
            ct_calibration runs = cal; /* the schedule fill starts from zero: keep the runs */
            ct_cal_from_timeline(best_chunks, best_nc, sr, &cal);
            cal.n_runs = runs.n_runs;
            memcpy(cal.runs, runs.runs, sizeof cal.runs);
            free(best_chunks);
        }
        free(chunks);
        snprintf(cal.model_id, sizeof cal.model_id, "%s", rep->model_id);
        snprintf(cal.engine_version, sizeof cal.engine_version, "%s", ct_version());
        snprintf(cal.kernels, sizeof cal.kernels, "%s", ct_kernels_id());
        snprintf(cal.talker_weights, sizeof cal.talker_weights, "%s", ct_wformat_name(o->talker_fmt));
        snprintf(cal.predictor_weights, sizeof cal.predictor_weights, "%s", ct_wformat_name(o->pred_fmt));
        char path[1024];
        if (ct_cal_cache_path(cache, rep->fingerprint, cal.talker_weights, cal.predictor_weights, path, sizeof path,
                              err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            goto done;
        }
        ct_calibration old;
        int found = 0;
        char w[1200];
        ct_cal_load(path, NULL, NULL, NULL, &old, &found, w, sizeof w);
        if (w[0]) fprintf(stderr, "warning: %s (rewriting it)\n", w);
        if (!dry && ct_cal_save(path, &cal, rep->fingerprint, rep->model_id, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            goto done;
        }
        if (json) {
            char *js = ct_cal_to_json(&cal, rep->fingerprint, rep->model_id);
            if (js) printf("%s\n", js);
            free(js);
        } else {
            if (cal.measured)
                printf("%s/%s: rate %.2f frames/s, rtf %.3f, ttfa %.0f ms; ", cal.talker_weights,
                       cal.predictor_weights, cal.rate_frames_per_s, cal.rtf, cal.ttfa_ms);
            else
                printf("%s/%s: chunk rate not measurable (fewer than 2 audio chunks): fallback schedule; ",
                       cal.talker_weights, cal.predictor_weights);
            printf("adaptive %s, min %d frames, margin %.1f ms, ramp [", cal.adaptive ? "true" : "false",
                   cal.min_frames, cal.margin_ms);
            for (int k = 0; k < cal.n_ramp; k++) printf("%s%d", k ? ", " : "", cal.ramp[k]);
            printf("]\n%s %s\n", dry ? "not written (dry run):" : "cached:", path);
        }
    }
    rc = 0;
done:
    ct_codec_free(codec);
    free(p);
    free(rep);
    return rc;
}
