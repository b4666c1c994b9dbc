#!/usr/bin/env python3
"""The shared library exports exactly the public API, and the runtime stays apart from the tools.

usage: check_exports.py LIBCODECTALK_SO SRC_DIR LAYERS_FILE

1. Every function declared in include/codectalk.h and include/codectalk_status.h carries CT_API
   (a declaration without it fails), and the set of dynamic symbols the library defines
   (nm -D --defined-only) equals the set of declared functions: a declared function the library
   does not export, or any other symbol it exports, fails.
2. The library's SONAME is libcodectalk.so.<CT_VERSION_MAJOR>, and it needs neither libyaml,
   libmicrohttpd nor libcrypto (those belong to the tools library).
3. Layer rule: no runtime file (a source listed as "runtime" in LAYERS_FILE, or a header beside
   one, or in a runtime directory) includes a tools header (a header of a "tools" source, or any
   header under src/edge, serve, report, export or cli).
"""
import os
import re
import subprocess
import sys

TOOL_DIRS = ("edge", "serve", "report", "export", "cli")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declared_functions(header):
    """(name, has_ct_api) for every function declaration in the header."""
    text = strip_comments(open(header).read())
    text = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("#"))
    out = []
    for stmt in re.split(r"[;{}]", text):
        stmt = " ".join(stmt.split())
        m = re.search(r"\b(ct_[A-Za-z0-9_]+)\s*\(", stmt)
        if not m or stmt.startswith("typedef"):
            continue
        out.append((m.group(1), stmt.startswith("CT_API ")))
    return out


def main():
    lib, src, layers = sys.argv[1:4]
    declared = set()
    macros = {}
    for h in ("codectalk.h", "codectalk_status.h"):
        path = os.path.join(src, "include", h)
        for name, has_api in declared_functions(path):
            declared.add(name)
            if not has_api:
                fail(f"{h}: {name}() is declared without CT_API")
        for m in re.finditer(r"^#define (CT_VERSION_[A-Z]+) (\S+)", open(path).read(), re.M):
            macros[m.group(1)] = m.group(2)
    if len(declared) < 40:
        fail(f"only {len(declared)} functions found in the public headers: the parser is broken")

    nm = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                        text=True).stdout
    exported = {l.split()[-1].split("@")[0] for l in nm.splitlines() if l.strip()}
    for name in sorted(declared - exported):
        fail(f"{name}() is declared in the public headers but not exported by {lib}")
    for name in sorted(exported - declared):
        fail(f"{lib} exports {name}, which the public headers do not declare")

    dyn = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    want = "libcodectalk.so." + macros.get("CT_VERSION_MAJOR", "?")
    if not soname or soname.group(1) != want:
        fail(f"SONAME is {soname.group(1) if soname else 'missing'}, expected {want}")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    for lib_name in needed:
        if re.match(r"lib(yaml|microhttpd|crypto)\b", lib_name):
            fail(f"the runtime library needs {lib_name} (a tools-only dependency)")

    sources = {"runtime": [], "tools": []}
    for line in open(layers):
        kind, _, path = line.strip().partition(" ")
        if kind in sources:
            sources[kind].append(os.path.relpath(path, os.path.join(src, "src")))
    if not sources["runtime"] or not sources["tools"]:
        fail(f"{layers} lists no runtime or no tools sources")
    tool_headers = {p[:-2] + ".h" for p in sources["tools"]}
    runtime_files = set(sources["runtime"]) | {p[:-2] + ".h" for p in sources["runtime"]}
    for root, _, files in os.walk(os.path.join(src, "src")):
        for fn in files:
            rel = os.path.relpath(os.path.join(root, fn), os.path.join(src, "src"))
            if rel.split(os.sep)[0] in TOOL_DIRS and fn.endswith(".h"):
                tool_headers.add(rel)
            elif fn.endswith(".h") and rel not in tool_headers:
                runtime_files.add(rel)
    for rel in sorted(runtime_files - tool_headers):
        path = os.path.join(src, "src", rel)
        if not os.path.exists(path):
            continue
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(path).read(), re.M):
            if inc in tool_headers:
                fail(f"runtime file src/{rel} includes the tools header {inc}")

    if failures:
        return 1
    print(f"{len(declared)} public functions, all exported and nothing else; SONAME {want}; "
          f"needs {', '.join(needed)}; {len(runtime_files)} runtime files include no tools header")
    return 0


if __name__ == "__main__":
    sys.exit(main())
