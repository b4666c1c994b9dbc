#!/usr/bin/env python3
"""Static checks of the deployment files (tests/cli/test_scale.sh): deploy/Dockerfile syntax
(no docker here), the Kubernetes manifests parsed as YAML, and the nginx configuration's
streaming and retry directives. Prints the container's serve arguments (the Dockerfile's CMD,
equal to the Deployment's args) as one JSON array on stdout for the caller to run.

usage: check_deploy.py SRC_DIR   (exit 1 and one line per problem)
"""
import json
import os
import re
import sys

import yaml

SRC = sys.argv[1]
problems = []


def need(cond, what):
    if not cond:
        problems.append(what)


# ---- Dockerfile -----------------------------------------------------------------------------
KEYWORDS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR",
            "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
text = open(os.path.join(SRC, "deploy", "Dockerfile")).read()
instrs, cur = [], ""
for n, line in enumerate(text.splitlines(), 1):
    if not cur and (not line.strip() or line.lstrip().startswith("#")):
        continue
    if cur and line.lstrip().startswith("#"):
        continue  # a comment inside a continued instruction
    cur += line.rstrip()
    if cur.endswith("\\"):
        cur = cur[:-1] + " "
        continue
    instrs.append((n, cur.strip()))
    cur = ""
need(cur == "", "Dockerfile: ends inside a continued line")
stages, entry, cmd = [], None, None
for n, ins in instrs:
    kw, _, arg = ins.partition(" ")
    need(kw in KEYWORDS, f"Dockerfile line {n}: unknown instruction {kw!r}")
    need(arg.strip() != "", f"Dockerfile line {n}: {kw} without arguments")
    if kw == "FROM":
        m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", arg.strip(), re.I)
        need(m is not None, f"Dockerfile line {n}: FROM IMAGE [AS NAME]")
        if m:
            need(m.group(1).startswith("debian:12"), f"Dockerfile line {n}: base {m.group(1)} is not Debian 12")
            stages.append(m.group(2))
    elif not stages:
        problems.append(f"Dockerfile line {n}: {kw} before FROM")
    if kw == "COPY":
        m = re.search(r"--from=(\S+)", arg)
        if m:
            need(m.group(1) in stages[:-1], f"Dockerfile line {n}: COPY --from={m.group(1)}: no such earlier stage")
    if kw in ("ENTRYPOINT", "CMD"):
        try:
            v = json.loads(arg)
            need(isinstance(v, list) and all(isinstance(x, str) for x in v), f"Dockerfile line {n}: {kw} not a list")
        except ValueError:
            problems.append(f"Dockerfile line {n}: {kw} is not the JSON exec form")
            v = None
        if kw == "ENTRYPOINT":
            entry = v
        else:
            cmd = v
    if kw == "RUN":
        for script in re.findall(r"(scripts/[\w./-]+)", arg):
            need(os.path.exists(os.path.join(SRC, script)), f"Dockerfile line {n}: {script} does not exist")
need("make install" in text, "Dockerfile: does not build with the project's make install")
need(entry == ["codectalk", "serve"], f"Dockerfile: ENTRYPOINT {entry} is not codectalk serve")
need(cmd is not None, "Dockerfile: no CMD")

# ---- Kubernetes -----------------------------------------------------------------------------
docs = []
for fn in sorted(os.listdir(os.path.join(SRC, "deploy", "k8s"))):
    with open(os.path.join(SRC, "deploy", "k8s", fn)) as f:
        docs += [d for d in yaml.safe_load_all(f) if d]
kinds = {d.get("kind"): d for d in docs}
dep, svc = kinds.get("Deployment"), kinds.get("Service")
need(dep is not None and svc is not None, f"k8s: need a Deployment and a Service (got {sorted(kinds)})")
if dep and svc:
    need(dep.get("apiVersion") == "apps/v1" and svc.get("apiVersion") == "v1", "k8s: apiVersions")
    pod = dep["spec"]["template"]
    need(dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
         "k8s: the Deployment's selector does not match its pods")
    need(svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), "k8s: the Service selects no pod")
    c = pod["spec"]["containers"][0]
    ports = {p.get("name"): p["containerPort"] for p in c["ports"]}
    probe = c.get("readinessProbe", {}).get("httpGet", {})
    need(probe.get("path") == "/health", f"k8s: readinessProbe path {probe.get('path')} is not /health")
    pp = probe.get("port")
    need(pp in ports or pp in ports.values(), f"k8s: readinessProbe port {pp} is not a container port")
    tp = svc["spec"]["ports"][0]["targetPort"]
    need(tp in ports or tp in ports.values(), f"k8s: Service targetPort {tp} is not a container port")
    need(c.get("args") == cmd, f"k8s: container args {c.get('args')} differ from the Dockerfile CMD {cmd}")
    cport = next(iter(ports.values()))
    need(cmd and "--port" in cmd and cmd[cmd.index("--port") + 1] == str(cport),
         "the serve --port of CMD is not the container port")
    mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
    need(cmd and cmd[cmd.index("-m") + 1] in mounts, "k8s: the model dir of the args is not mounted")

# ---- nginx ----------------------------------------------------------------------------------
conf = open(os.path.join(SRC, "deploy", "nginx", "codectalk.conf")).read()
conf = re.sub(r"#[^\n]*", "", conf)
for d in [r"proxy_buffering\s+off;", r"proxy_http_version\s+1\.1;", r'proxy_set_header\s+Connection\s+"";',
          r"proxy_next_upstream\s+[^;]*\bhttp_503\b[^;]*;", r"proxy_next_upstream\s+[^;]*\bnon_idempotent\b[^;]*;"]:
    need(re.search(d, conf), f"nginx: no {d}")
servers = re.findall(r"^\s*server\s+([^\s{]+)([^;{]*);", conf, re.M)
need(len(servers) >= 2 and all("max_fails=0" in s[1] for s in servers),
     f"nginx: upstream servers need max_fails=0 (a 503 must not take one out): {servers}")

if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
print(json.dumps(cmd))
