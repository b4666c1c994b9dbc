/* `codectalk probe`, `codectalk profile` and `codectalk calibrate`: thin wrappers printing the
   hardware probe, the materialised layered profile and the chunk calibration. */
#include "cli/cmd_edge.h"
#include "codectalk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli_common.h"
#include "core/fileio.h"
#include "edge/calibrate.h"
#include "edge/derive.h"
#include "edge/probe.h"
#include "edge/profile.h"

static double gib(uint64_t b) { return (double)b / (double)CT_GIB; }

static void print_hw(const ct_hw_profile *p) {
    printf("source:        %s\n", p->source);
    printf("class:         %s\n", ct_hw_class_name(ct_hw_classify(p)));
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
    printf("accelerator:   %s", p->accelerator);
    if (p->gpu_name[0] || p->gpu_mem_bytes)
        printf(" (%s, %.2f GiB, %d SMs, cc %d.%d)", p->gpu_name[0] ? p->gpu_name : "?",
               gib(p->gpu_mem_bytes), p->gpu_sm_count, p->gpu_capability[0], p->gpu_capability[1]);
    printf("\nbf16 / fp16:   %s / %s\n", p->supports_bf16 ? "yes" : "no", p->supports_fp16 ? "yes" : "no");
    printf("thermal zones: %d\n", p->thermal_zones);
    if (p->notes[0]) printf("notes:         %s\n", p->notes);
}

static void print_derived(const ct_derived *d) {
    printf("derived:\n");
    printf("  dtype %s, pool %.2f GiB, weights %.2f GiB, activations %.2f GiB, headroom %.2f GiB\n",
           d->dtype, gib(d->pool_bytes), gib(d->weights_bytes), gib(d->activation_bytes),
           gib(d->headroom_bytes));
    printf("  KV budget %llu B: talker %llu B, codec %llu B; %llu B/token, %llu B/stream\n",
           (unsigned long long)d->budget_bytes, (unsigned long long)d->kv0_bytes,
           (unsigned long long)d->kv1_bytes, (unsigned long long)d->kv_bytes_per_token,
           (unsigned long long)d->per_seq_bytes);
    printf("  max streams %d, context %d / %d, eager %d/%d, small_vram %d\n", d->max_num_seqs,
           d->max_len0, d->max_len1, d->eager0, d->eager1, d->small_vram);
    if (d->cpu_bind) printf("  cpus talker '%s' codec '%s'\n", d->cpus0, d->cpus1);
    printf("  chunk min %d frames, margin %d ms; timeouts %d s / %d s\n", d->chunk_min_frames,
           d->chunk_margin_ms, d->stage_init_timeout_s, d->init_timeout_s);
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

int ct_cli_profile(int argc, char **argv) {
    int autom = 0, explain = 0, max_cpus = 0, no_cal = 0;
    const char *model = NULL, *out = NULL, *root = NULL, *pdir = NULL, *cache = NULL, *user = NULL;
    const char *sets[64], *set_help = NULL;
    int n_sets = 0;
    argc = take_sets(argc, argv, sets, 64, &n_sets);
    const ct_opt opts[] = {
        {"auto", 0, CT_OPT_FLAG, &autom, NULL, "derive the profile for this machine (layer chain)"},
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory (weights bytes, KV geometry, id)"},
        {"explain", 0, CT_OPT_FLAG, &explain, NULL, "comment every value with the layer that set it"},
        {"out", 'o', CT_OPT_STR, &out, "FILE", "write the YAML here instead of stdout"},
        {"profile", 0, CT_OPT_STR, &user, "FILE", "user profile: top layer with --auto, else the whole profile"},
        {"root", 0, CT_OPT_STR, &root, "DIR", "probe a snapshot tree instead of this machine"},
        {"profiles-dir", 0, CT_OPT_STR, &pdir, "DIR", "directory holding qwen3_tts.yaml and hardware/"},
        {"cache-dir", 0, CT_OPT_STR, &cache, "DIR", "calibration cache root (default $XDG_CACHE_HOME/codectalk)"},
        {"max-cpus", 0, CT_OPT_INT, &max_cpus, "N", "use at most N CPUs of the big cluster"},
        {"no-calibration", 0, CT_OPT_FLAG, &no_cal, NULL, "ignore the calibration cache"},
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
    ct_auto_opts ao = {pdir, model, root, NULL, cache, autom ? user : NULL, sets, n_sets, max_cpus, no_cal};
    ct_profile *p = malloc(sizeof *p);
    ct_auto_report *rep = malloc(sizeof *rep);
    char err[1024];
    int rc = 1;
    char *yaml = NULL;
    if (!p || !rep) goto done;
    ct_status st;
    char header[8192] = "";
    if (autom) {
        st = ct_profile_auto(&ao, p, rep, err, sizeof err);
        if (st == CT_OK) {
            const ct_hw_profile *h = &rep->hw;
            char cal[1200];
            if (rep->have_calibration)
                snprintf(cal, sizeof cal, "%s (rate %.1f frames/s, rtf %.3f)", rep->cache_path,
                         rep->cal.rate_frames_per_s, rep->cal.rtf);
            else
                snprintf(cal, sizeof cal, "none at %s", rep->cache_path[0] ? rep->cache_path : "(disabled)");
            snprintf(header, sizeof header,
                     "codectalk profile --auto: model %s, class %s, fingerprint %s\n"
                     "hardware: %s, %s, %d logical / %d physical CPUs, %.2f GiB RAM, accelerator %s\n"
                     "%s\n%s\n"
                     "layers: builtin -> %s%s -> %s%s -> derived -> calibration %s -> user %s -> flags (%d)%s%s%s%s",
                     rep->model_id, ct_hw_class_name(rep->derived.cls), rep->fingerprint, h->source,
                     h->cpu_model[0] ? h->cpu_model : "unknown cpu", h->n_logical, h->n_physical,
                     gib(h->ram_total_bytes), h->accelerator, rep->derived.notes[0], rep->derived.notes[1],
                     rep->base_path, ct_file_exists(rep->base_path) ? "" : " (missing)",
                     rep->hw_overlay_path, rep->hw_overlay_found ? "" : " (missing)", cal,
                     user ? user : "(none)", n_sets, h->notes[0] ? "\nprobe notes: " : "", h->notes,
                     rep->warnings[0] ? "\nwarnings: " : "", rep->warnings);
        }
    } else {
        st = ct_profile_resolve(user, &ao, p, err, sizeof err);
        snprintf(header, sizeof header, "codectalk profile --profile %s", user);
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
    free(p);
    free(rep);
    return rc;
}

/* One measured request on the stream engine (engine and stream defaults: the exact schedule, one
   chunk per frame as it is produced). */
static int measure_request(const char *model, ct_chunk_rec **chunks, int *nc, int *sr) {
    char err[1024];
    ct_model *m = NULL;
    ct_codec *c = NULL;
    ct_engine *e = NULL;
    int rc = -1;
    if (ct_model_load(model, NULL, &m, err, sizeof err) != CT_OK ||
        ct_codec_load(model, &c, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    ct_engine_params ep = ct_engine_params_default();
    if (ct_engine_create(m, c, &ep, &e, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        goto done;
    }
    ct_gen_params g = ct_gen_params_default();
    g.text = "Calibration request: a sentence of ordinary length, spoken at an even pace.";
    if (ct_model_get_info(m).n_speakers) g.speaker = ct_model_speaker(m, 0);
    if (strcmp(ct_model_get_info(m).kind, "voice_design") == 0) g.instruct = "A calm voice.";
    g.max_frames = 50;
    g.min_new_tokens = 50;
    ct_stream_params sp = ct_stream_params_default();
    ct_stream_info info;
    if (ct_cli_run_stream(e, &g, &sp, "measured request", chunks, nc, &info) != 0) goto done;
    *sr = ct_codec_sample_rate(c);
    fprintf(stderr, "measured request: %d chunks, first audio at %.1f ms, done at %.1f ms (%s placement)\n", *nc,
            *nc ? (*chunks)[0].t_ms : 0.0, info.done_ms, ct_placement_str(ct_engine_get_limits(e).placement));
    rc = 0;
done:
    ct_engine_free(e);
    ct_codec_free(c);
    ct_model_free(m);
    return rc;
}

int ct_cli_calibrate(int argc, char **argv) {
    int json = 0, dry = 0;
    const char *model = NULL, *timeline = NULL, *root = NULL, *cache = NULL;
    const ct_opt opts[] = {
        {"model", 'm', CT_OPT_STR, &model, "DIR", "model directory (its id enters the fingerprint)"},
        {"timeline", 0, CT_OPT_STR, &timeline, "FILE", "recorded chunk timeline JSON {sample_rate, chunks:[{t_ms, samples}]}"},
        {"root", 0, CT_OPT_STR, &root, "DIR", "fingerprint a snapshot tree instead of this machine"},
        {"cache-dir", 0, CT_OPT_STR, &cache, "DIR", "calibration cache root (default $XDG_CACHE_HOME/codectalk)"},
        {"json", 0, CT_OPT_FLAG, &json, NULL, "print the calibration as JSON"},
        {"dry-run", 0, CT_OPT_FLAG, &dry, NULL, "do not write the cache"},
        {NULL, 0, CT_OPT_FLAG, NULL, NULL, NULL},
    };
    int r = ct_args_parse(argc, argv, opts, "usage: codectalk calibrate -m DIR [--timeline FILE] [--json] [--dry-run]\n"
                                            "Without --timeline, runs one measured streaming request on the model.");
    if (r) return r > 0 ? 0 : 2;
    if (!timeline && !model) {
        fprintf(stderr, "error: give -m DIR (one measured streaming request) or --timeline FILE\n");
        return 2;
    }
    char err[1024];
    ct_hw_profile hw;
    if (ct_hw_detect(root, &hw, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    ct_chunk_rec *chunks = NULL;
    int nc = 0, sr = 0;
    if (timeline) {
        char *buf = NULL;
        size_t n = 0;
        if (ct_read_file(timeline, 64u << 20, &buf, &n, err, sizeof err) != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            return 1;
        }
        ct_status st = ct_cal_parse_timeline(buf, n, timeline, &chunks, &nc, &sr, err, sizeof err);
        free(buf);
        if (st != CT_OK) {
            fprintf(stderr, "error: %s\n", err);
            return 1;
        }
    } else if (measure_request(model, &chunks, &nc, &sr) != 0) {
        return 1;
    }
    ct_calibration cal;
    ct_cal_from_timeline(chunks, nc, sr, &cal);
    free(chunks);
    char id[96], fp[17], path[1024];
    ct_model_id(model, id, sizeof id);
    if (ct_hw_fingerprint(&hw, id, fp, err, sizeof err) != CT_OK ||
        ct_cal_cache_path(cache, fp, path, sizeof path, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    ct_calibration old;
    int found = 0;
    char w[512];
    ct_cal_load(path, &old, &found, w, sizeof w);
    if (w[0]) fprintf(stderr, "warning: %s (rewriting it)\n", w);
    if (!dry && ct_cal_save(path, &cal, fp, id, err, sizeof err) != CT_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (json) {
        char *s = ct_cal_to_json(&cal, fp, id);
        if (s) printf("%s\n", s);
        free(s);
    } else {
        printf("model %s, class %s, fingerprint %s\n", id, ct_hw_class_name(ct_hw_classify(&hw)), fp);
        if (cal.measured)
            printf("rate %.2f frames/s, rtf %.3f, ttfa %.0f ms\n", cal.rate_frames_per_s, cal.rtf, cal.ttfa_ms);
        else
            printf("not measurable (fewer than 2 audio chunks): fallback schedule\n");
        printf("adaptive %s, min %d frames, margin %.1f ms, ramp [", cal.adaptive ? "true" : "false",
               cal.min_frames, cal.margin_ms);
        for (int i = 0; i < cal.n_ramp; i++) printf("%s%d", i ? ", " : "", cal.ramp[i]);
        printf("]\n%s %s\n", dry ? "not written (dry run):" : "cached:", path);
    }
    return 0;
}
