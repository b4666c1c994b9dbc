#!/usr/bin/env python3
"""Tests `codectalk export sanitize` on small hand-built ONNX models (onnx.helper): one per
sanitizer rule (docs/EXPORT.md, Sanitizer), one with external data, and bad inputs (truncated, not protobuf, cycle,
unknown opset domain, missing external data) that must fail with nothing written.
usage: sanitize_test.py CODECTALK_BINARY WORKDIR   (prints PASS/FAIL lines; exit = failures)"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

FAILS = 0


def report(ok, what, detail=""):
    global FAILS
    print(("PASS " if ok else "FAIL ") + what + (" " + detail if detail else ""), flush=True)
    if not ok:
        FAILS += 1


def run_ort(path, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def sanitize(exe, src, dst):
    if os.path.exists(dst):
        os.remove(dst)
    r = subprocess.run([exe, "export", "sanitize", src, "-o", dst], capture_output=True, text=True)
    counts = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return r.returncode, counts, r.stderr.strip()


def model(nodes, inputs, outputs, inits=(), value_info=(), opset=18, domain=""):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid(domain, opset)], ir_version=8)


def check_case(exe, wd, name, m, feeds, expect, gone, ref=None):
    src, dst = os.path.join(wd, name + ".onnx"), os.path.join(wd, name + ".clean.onnx")
    onnx.save(m, src)
    rc, counts, err = sanitize(exe, src, dst)
    if rc != 0:
        report(False, "sanitize " + name, err)
        return
    report(all(counts.get(k) == v for k, v in expect.items()), f"sanitize {name} counts", str(counts))
    out = onnx.load(dst)
    try:
        onnx.checker.check_model(out, full_check=True)
        onnx.shape_inference.infer_shapes(out, check_type=True, strict_mode=True)
        report(True, f"sanitize {name} checker")
    except Exception as e:  # noqa: BLE001
        report(False, f"sanitize {name} checker", str(e).splitlines()[0][:200])
    report(gone(out), f"sanitize {name} pattern gone")
    # a model ORT cannot run before the fix (rank-0 axes) is compared with a numpy reference
    a, b = ref if ref is not None else run_ort(src, feeds), run_ort(dst, feeds)
    same = len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    report(same, f"sanitize {name} same outputs " + ("as numpy" if ref is not None else "in ORT before/after"))


def main(exe, wd):
    os.makedirs(wd, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5}
    zero = numpy_helper.from_array(np.zeros((2, 3), np.float32), "zero")
    # rule 1: Where(IsNaN(t), zero, t) in the middle and at a graph output
    n1 = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("IsNaN", ["t"], ["nan"]),
          helper.make_node("Where", ["nan", "zero", "t"], ["w"]), helper.make_node("Neg", ["w"], ["u"]),
          helper.make_node("IsNaN", ["u"], ["nan2"]), helper.make_node("Where", ["nan2", "zero", "u"], ["y"])]
    check_case(exe, wd, "nan_guard", model(n1, [x], [y], [zero]), feeds, {"nan_guards_removed": 2},
               lambda m: not any(n.op_type in ("IsNaN", "Where") for n in m.graph.node))
    # rule 2: Reshape allowzero=1
    shp = numpy_helper.from_array(np.array([3, 2], np.int64), "shp")
    y2 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])
    n2 = [helper.make_node("Reshape", ["x", "shp"], ["y"], allowzero=1)]
    check_case(exe, wd, "allowzero", model(n2, [x], [y2], [shp]), feeds, {"allowzero_cleared": 1},
               lambda m: all(a.i == 0 for n in m.graph.node for a in n.attribute if a.name == "allowzero"))
    # rule 3: rank-0 axes as an initializer (Unsqueeze) and as a Constant (Squeeze), with stale value_info
    ax = numpy_helper.from_array(np.array(0, np.int64), "ax")
    n3 = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
          helper.make_node("Constant", [], ["cax"], value=numpy_helper.from_array(np.array(0, np.int64))),
          helper.make_node("Squeeze", ["u", "cax"], ["y"])]
    vi = [helper.make_tensor_value_info("cax", TensorProto.INT64, []), helper.make_tensor_value_info("ax", TensorProto.INT64, [])]
    check_case(exe, wd, "scalar_axes", model(n3, [x], [y], [ax], vi), feeds, {"scalar_axes_fixed": 2},
               lambda m: all(len(t.dims) == 1 for t in m.graph.initializer if t.name == "ax") and
               all(len(a.t.dims) == 1 for n in m.graph.node if n.op_type == "Constant" for a in n.attribute)
               and not any(v.name in ("ax", "cax") for v in m.graph.value_info), ref=[feeds["x"]])
    # external data: a large initializer kept external and consistent
    big = numpy_helper.from_array(np.linspace(-1, 1, 4096 * 3, dtype=np.float32).reshape(4096, 3), "big")
    xb = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4096])
    yb = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    n4 = [helper.make_node("MatMul", ["x", "big"], ["t"]), helper.make_node("IsNaN", ["t"], ["n"]),
          helper.make_node("Where", ["n", "zero", "t"], ["y"])]
    m4 = model(n4, [xb], [yb], [big, zero])
    src = os.path.join(wd, "ext.onnx")
    onnx.save(m4, src, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.onnx.weights", size_threshold=1024)
    dst = os.path.join(wd, "ext.clean.onnx")
    rc, counts, err = sanitize(exe, src, dst)
    ok = rc == 0 and os.path.exists(dst + ".data") and counts.get("nan_guards_removed") == 1
    fx = {"x": np.ones((2, 4096), np.float32)}
    if ok:
        onnx.checker.check_model(dst, full_check=True)
        ok = np.array_equal(run_ort(src, fx)[0], run_ort(dst, fx)[0])
    report(ok, "sanitize external data re-saved as <out>.data", err)
    # bad inputs: nothing written
    good = open(os.path.join(wd, "allowzero.onnx"), "rb").read()
    bad = {"truncated": good[: len(good) // 2], "not_protobuf": b"\xff\xff\xff\xff garbage"}
    nc = [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]), helper.make_node("Relu", ["x"], ["y"])]
    bad["cycle"] = model(nc, [x], [y]).SerializeToString()
    bad["unknown_opset"] = model([helper.make_node("Relu", ["x"], ["y"])], [x], [y], domain="com.example.weird").SerializeToString()
    for name, data in bad.items():
        p = os.path.join(wd, "bad_" + name + ".onnx")
        open(p, "wb").write(data)
        out = os.path.join(wd, "bad_" + name + ".out.onnx")
        rc, _, err = sanitize(exe, p, out)
        report(rc != 0 and not os.path.exists(out) and len(err) > 0, f"sanitize rejects {name}", err[:160])
    os.remove(os.path.join(wd, "ext.onnx.weights"))
    out = os.path.join(wd, "bad_missing_ext.out.onnx")
    rc, _, err = sanitize(exe, src, out)
    report(rc != 0 and not os.path.exists(out), "sanitize rejects missing external data", err[:160])
    return min(FAILS, 100)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
