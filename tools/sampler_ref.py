#!/usr/bin/env python3
"""Reference processed logits for tests/unit/test_sampler.c from the real Hugging Face
processors (transformers 4.57.3, torch CPU), built by GenerationMixin._get_logits_processor
exactly as `generate` builds them for an inputs_embeds-only decoder (prompt length 0).

Run by hand (needs a venv with torch and transformers==4.57.3):
    .venv-samp/bin/python tools/sampler_ref.py > tests/data/sampler/hf_ref.txt

Output format (whitespace separated, '#' lines are comments):
    cases <count>
    case <name>
    cfg <n> <do_sample> <temperature> <top_k> <top_p> <repetition_penalty> <min_new_tokens>
        <eos_id> <suppress_lo> <suppress_hi>
    gen <L> <id_1> ... <id_L>        generated ids so far, duplicates included
    in <n values>                    raw logits (short decimals; parse as double, cast to float)
    out <n values>                   processed scores after the full HF chain (float32, %.9g)
    argmax <id>                      torch.argmax of `out` in greedy cases, -1 when sampling
"""
import sys

import numpy as np
import torch
import transformers
from transformers import GenerationConfig
from transformers.generation.utils import GenerationMixin


class _Gen(GenerationMixin):
    """Only what _get_logits_processor touches."""


def hf_processors(cfg):
    gc = GenerationConfig(
        do_sample=bool(cfg["do_sample"]),
        temperature=cfg["temperature"],
        top_k=cfg["top_k"],
        top_p=cfg["top_p"],
        repetition_penalty=cfg["penalty"],
        min_new_tokens=cfg["min_new"] if cfg["min_new"] > 0 else None,
        suppress_tokens=cfg["suppress"] if cfg["suppress"] else None,
        eos_token_id=cfg["eos"],
    )
    # what generate() does before building the list (prompt length 0: inputs_embeds only)
    if gc.min_new_tokens is not None:
        gc.min_length = gc.min_new_tokens + 0
    gc._eos_token_tensor = torch.tensor([cfg["eos"]]) if cfg["eos"] >= 0 else None
    return _Gen()._get_logits_processor(
        generation_config=gc, input_ids_seq_length=0, encoder_input_ids=torch.zeros((1, 0), dtype=torch.long),
        logits_processor=None, device="cpu", model_kwargs={})


def fmt(x):
    x = float(x)
    if x == float("-inf"):
        return "-inf"
    if x == float("inf"):
        return "inf"
    return "%.9g" % x


def emit(name, logits, cfg, gen):
    n = len(logits)
    lo, hi = cfg.get("range", (1, 0))
    cfg["suppress"] = [i for i in range(lo, hi + 1) if i != cfg["eos"]] if lo <= hi else []
    procs = hf_processors(cfg)
    scores = torch.tensor([logits], dtype=torch.float64).to(torch.float32)
    ids = torch.tensor([gen], dtype=torch.long).reshape(1, len(gen))
    out = procs(ids, scores)[0]
    am = int(torch.argmax(out)) if not cfg["do_sample"] else -1
    print("case", name)
    print("# processors:", " ".join(type(p).__name__ for p in procs))
    print("cfg", n, cfg["do_sample"], cfg["temperature"], cfg["top_k"], cfg["top_p"], cfg["penalty"],
          cfg["min_new"], cfg["eos"], lo, hi)
    print("gen", len(gen), *gen)
    print("in", *(fmt(v) for v in logits))
    print("out", *(fmt(v) for v in out.tolist()))
    print("argmax", am)


def main():
    rng = np.random.default_rng(20250520)
    cases = []

    def rnd(n, scale=3.0, dec=3):
        return [round(float(v), dec) for v in rng.standard_normal(n) * scale]

    talker = dict(do_sample=1, temperature=0.9, top_k=50, top_p=1.0, penalty=1.05, min_new=2, eos=2150,
                  range=(2048, 3071))
    # Full talker configuration (the sampling defaults of generation_config.json: temperature 0.9,
    # top-k 50, top-p 1.0, repetition penalty 1.05, EOS masked for 2 steps), several history states.
    for k, gen_len in enumerate([0, 1, 7]):
        lg = rnd(3072)
        lg[2150] = 9.5  # EOS strongly preferred: masked only while fewer than 2 generated
        gen = [int(v) for v in rng.integers(0, 2048, gen_len)]
        if gen_len > 3:
            gen[3] = gen[1]  # a duplicate: penalised once
        cases.append(("talker_%d" % k, lg, dict(talker), gen))
    # Greedy talker: processors still apply, then argmax.
    lg = rnd(3072)
    gen = [int(v) for v in rng.integers(0, 2048, 12)]
    lg[gen[0]] = 12.0   # penalised positive top
    lg[gen[1]] = -0.25  # penalised negative
    g = dict(talker, do_sample=0)
    cases.append(("talker_greedy", lg, g, gen))
    # Ties: integer logits so top-k keeps every tie of the k-th value.
    lg = [float(v) for v in rng.integers(-6, 7, 3072)]
    cases.append(("talker_ties", lg, dict(talker, penalty=1.0, min_new=0), []))
    # Sub-talker: plain chain on 2048.
    sub = dict(do_sample=1, temperature=0.9, top_k=50, top_p=1.0, penalty=1.0, min_new=0, eos=-1)
    cases.append(("sub_default", rnd(2048), dict(sub), []))
    # Top-p cases (with and without top-k), various sizes.
    for name, n, tk, tp, t in [("topp_64", 64, 0, 0.8, 1.0), ("topp_257", 257, 0, 0.95, 0.7),
                               ("topp_topk", 300, 40, 0.5, 1.3), ("topp_small", 16, 0, 0.3, 1.0),
                               ("topp_high", 512, 0, 0.99, 0.9)]:
        cases.append((name, rnd(n, 2.0), dict(sub, top_k=tk, top_p=tp, temperature=t), []))
    # Top-p on ties (integer logits): exposes the sort tie order.
    for name, tp in [("topp_ties_a", 0.5), ("topp_ties_b", 0.9), ("topp_ties_c", 0.25)]:
        lg = [float(v) for v in rng.integers(-2, 3, 40)]
        cases.append((name, lg, dict(sub, top_p=tp, top_k=0, temperature=1.0), []))
    # Equal logits: exact cumulative boundary 0.25, 0.5, 0.75.
    for name, tp in [("topp_eq_050", 0.5), ("topp_eq_075", 0.75), ("topp_eq_025", 0.25)]:
        cases.append((name, [0.0] * 4, dict(sub, top_p=tp, top_k=0, temperature=1.0), []))
    # Threshold precision: HF compares with float32(1 - 0.9) = 0.1f, not 1.0f - 0.9f (3 ulps
    # higher). A smallest probability of 0.1f + 2 ulps survives in HF, would be cut otherwise.
    target = np.nextafter(np.nextafter(np.float32(0.1), np.float32(1)), np.float32(1))
    for q in np.linspace(0.0999999, 0.1000003, 4001):
        lg = [float("%.9g" % np.float32(np.log(q))), float("%.9g" % np.float32(np.log1p(-q)))]
        cum = torch.tensor([lg]).sort()[0].softmax(-1).cumsum(-1)[0]
        if cum[0].item() == float(target):
            break
    else:
        raise SystemExit("no boundary logits found")
    cases.append(("topp_decimal", lg, dict(sub, top_p=0.9, top_k=0, temperature=1.0), []))
    # -inf inputs mixed in, penalty with zero/negative values, suppression in the middle.
    lg = rnd(100)
    lg[3] = float("-inf")
    lg[10] = 0.0
    lg[11] = -0.0
    cases.append(("mixed", lg, dict(do_sample=1, temperature=0.5, top_k=10, top_p=0.9, penalty=1.3, min_new=5,
                                    eos=42, range=(30, 60)), [10, 11, 12, 12, 13, 3, 99, 42]))
    lg = rnd(100)
    cases.append(("mixed_greedy", lg, dict(do_sample=0, temperature=0.5, top_k=10, top_p=0.9, penalty=1.3,
                                           min_new=1, eos=42, range=(30, 60)), [5, 6, 7]))
    # top_k >= n: HF installs TopK but it changes nothing.
    cases.append(("topk_ge_n", rnd(20), dict(sub, top_k=20, temperature=0.8), []))

    print("# generated by tools/sampler_ref.py: torch", torch.__version__, "transformers", transformers.__version__)
    print("cases", len(cases))
    for name, lg, cfg, gen in cases:
        emit(name, lg, cfg, gen)


if __name__ == "__main__":
    sys.exit(main())
