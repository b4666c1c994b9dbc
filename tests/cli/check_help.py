#!/usr/bin/env python3
"""Walks every codectalk command and subcommand (from `codectalk --help`) and checks that
`--help` exits 0 and names every long flag its parser accepts. The flags come from the C source
(src/cli/*.c), not from the help text: ct_opt tables ({"name", 'x', CT_OPT_...}) and the
hand-rolled parsers' strcmp(arg, "--name") tests, per function, plus the flags of every src/cli
function it calls (ct_cli_gen_opts, parse_common, take_sets, ...).

usage: check_help.py CODECTALK SRC_DIR   (exit 1 and one line per problem on failure)
"""
import os
import re
import subprocess
import sys

BIN, SRC = sys.argv[1], sys.argv[2]
CLI = os.path.join(SRC, "src", "cli")

# command path -> the C function that parses its flags. A command that `codectalk --help` (or a
# command's own help) lists without an entry here is a failure: add it when adding a command.
ENTRY = {
    "synth": "ct_cli_synth", "codes": "cmd_codes", "tokenize": "cmd_tokenize",
    "make-model": "cmd_make_model", "info": "cmd_info", "quantize": "ct_cli_quantize",
    "export step": "cmd_step", "export codec": "cmd_codec", "export sanitize": "cmd_sanitize",
    "serve": "ct_cli_serve", "wyoming": "ct_cli_wyoming", "client": "ct_cli_client", "stats merge": "ct_cli_stats", "probe": "ct_cli_probe",
    "profile": "ct_cli_profile", "calibrate": "ct_cli_calibrate",
    "bench model": "cmd_model", "bench roofline": "cmd_roofline", "bench kernels": "cmd_kernels",
    "bench stream": "ct_cli_bench_stream", "bench threads": "ct_cli_bench_threads",
    "bench emulate": "ct_cli_bench_emulate", "bench serve": "ct_cli_bench_serve",
    "bench summarize": "ct_cli_summarize", "bench clone": "ct_cli_bench_clone", "voice info": "voice_info",
    "voice create": "voice_create",
}
GROUPS = {"export", "bench", "stats", "voice"}
# flags a shared table holds that a command removes before parsing; each is checked to be
# refused ("unknown option") by that command, so the exclusion cannot hide a real flag
REMOVED = {"bench threads": {"--placement"},
           "client": {"--xvector", "--sub-temperature", "--sub-top-k", "--sub-top-p", "--min-new-tokens",
                      "--max-frames", "--threads", "--context", "--f32", "--weights", "--tokenizer",
                      "--voice", "--x-vector-only", "--ref-audio", "--ref-text"}}  # commands whose help lists subcommands

def functions():
    """name -> body text for every top-level function in src/cli/*.c."""
    out = {}
    head = re.compile(r"^(?:static\s+)?[a-z_][\w \*]*?\b(\w+)\(([^;]*?)\)\s*\{", re.M | re.S)
    for fn in sorted(os.listdir(CLI)):
        if not fn.endswith(".c"):
            continue
        text = open(os.path.join(CLI, fn), encoding="utf-8").read()
        starts = [(m.start(), m.group(1)) for m in head.finditer(text)]
        for i, (pos, name) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
            out[name] = text[pos:end]
    return out

OPT = re.compile(r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*(?:\'.\'|0)\s*,\s*CT_OPT_')
CMP = re.compile(r'strcmp\(\s*[\w\[\]\+ ]+,\s*"(--[a-z][a-z0-9-]*)"\s*\)')

def flags_of(name, funcs, seen=None):
    seen = seen if seen is not None else set()
    if name in seen or name not in funcs:
        return set()
    seen.add(name)
    body = funcs[name]
    fl = {"--" + m for m in OPT.findall(body)} | set(CMP.findall(body))
    for callee in funcs:
        if callee != name and re.search(r"\b%s\(" % re.escape(callee), body):
            fl |= flags_of(callee, funcs, seen)
    fl.discard("--help")
    return fl

def run_help(args):
    p = subprocess.run([BIN] + args + ["--help"], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr

def main():
    funcs = functions()
    problems = []
    rc, top = run_help([])
    if rc != 0:
        problems.append("codectalk --help exits %d" % rc)
    cmds = re.findall(r"^  ([a-z][a-z0-9-]*)\s{2,}", top.split("commands:", 1)[-1], re.M)
    if len(cmds) < 10:
        problems.append("codectalk --help lists only %d commands: %s" % (len(cmds), cmds))
    paths = []
    for c in cmds + ["onnx-sanitize"]:
        rc, text = run_help([c])
        if rc != 0:
            problems.append("'%s --help' exits %d" % (c, rc))
        if c in GROUPS:
            subs = set(re.findall(r"codectalk %s ([a-z][a-z0-9-]*)" % re.escape(c), text))
            if c == "bench":
                subs |= set(re.findall(r"^  ([a-z][a-z0-9-]*)\s{2,}", text.split("benches:", 1)[-1], re.M))
            if not subs:
                problems.append("'%s --help' lists no subcommands" % c)
            paths += ["%s %s" % (c, s) for s in sorted(subs)]
        elif c != "onnx-sanitize":
            paths.append(c)
    # every bench the dispatcher knows is listed by `bench --help`
    for p in ENTRY:
        if p.startswith("bench ") and p not in paths:
            problems.append("'bench --help' does not list '%s'" % p.split()[1])
    checked = 0
    for p in paths:
        if p not in ENTRY:
            problems.append("'%s': no parser known to check_help.py (add it to ENTRY)" % p)
            continue
        fl = flags_of(ENTRY[p], funcs)
        for f in REMOVED.get(p, ()):
            fl.discard(f)
            r = subprocess.run([BIN] + p.split() + [f, "x"], capture_output=True, text=True, timeout=60)
            if r.returncode != 2 or "unknown option" not in r.stderr:
                problems.append("'%s %s x' is accepted but %s --help does not list it" % (p, f, p))
        if not fl:
            problems.append("'%s': no flags found in %s (parser moved?)" % (p, ENTRY[p]))
        rc, text = run_help(p.split())
        if rc != 0:
            problems.append("'%s --help' exits %d" % (p, rc))
        for f in sorted(fl):
            checked += 1
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(f), text):
                problems.append("'%s --help' does not list %s" % (p, f))
    for line in problems:
        print("FAIL:", line)
    print("check_help: %d commands, %d flags checked, %d problems" % (len(paths), checked, len(problems)))
    return 1 if problems or checked < 50 else 0

sys.exit(main())
