#!/usr/bin/env python3
"""Reference values for reel's paired-comparison statistics (src/eval/stats.rs).

Writes tests/data/eval_stats_reference.json, which a Rust unit test compares
to the stated precision. Computed independently of reel's code:

- exact McNemar p-value: scipy.stats.binomtest(b, b + c, 0.5), two-sided;
- Wilson score intervals: statsmodels proportion_confint(method="wilson");
- Newcombe's hybrid score interval for paired proportions (Newcombe 1998,
  method 10; Altman et al., Statistics with Confidence, 2nd ed., section 6):
  square-and-add of the statsmodels Wilson limits with the continuity-
  corrected phi coefficient;
- Holm: statsmodels multipletests(method="holm").
- Tarone's rule for discrete tests (Tarone 1990, Biometrics 46:515-522):
  each row's smallest achievable p is scipy's binomtest(0, d, 0.5) p-value
  for its d discordant pairs; K is the smallest k >= 1 with at most k rows
  whose smallest achievable p <= alpha / k; Holm (statsmodels) among those.
- The smallest detectable difference: the fewest one-sided discordant pairs
  d whose binomtest p-value is < alpha / J (J = 1: the verdict, tested
  alone; J > 1: J secondary rows that Tarone's rule all counts), as d / n.

Run: python3 -m venv /tmp/venv && /tmp/venv/bin/pip install scipy statsmodels
     /tmp/venv/bin/python scripts/eval-stats-reference.py
"""
import json
import math
import pathlib

from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

PRECISION = 1e-9

TABLES = [
    # (both, only_a, only_b, neither): A = baseline, B = candidate
    (0, 0, 1, 0), (1, 0, 0, 0), (0, 0, 0, 1), (2, 0, 0, 0),
    (0, 0, 5, 0), (0, 0, 6, 0), (0, 1, 6, 0), (3, 0, 7, 0),
    (8, 5, 4, 9), (12, 2, 9, 7), (20, 1, 1, 0), (0, 10, 0, 10),
    (5, 5, 5, 5), (30, 0, 0, 30), (1, 3, 11, 5), (40, 2, 12, 6),
    (9, 0, 1, 0), (0, 4, 4, 2), (7, 27, 1, 33), (0, 16, 15, 57),
    (10, 0, 0, 0), (2, 1, 8, 1), (25, 6, 0, 19), (1, 0, 9, 0),
]
CONFIDENCES = [0.95, 0.90]
HOLM = [
    [0.01, 0.04, 0.03, 0.5],
    [0.001, 0.2, 0.2, 1.0, 0.04],
    [0.05],
    [0.03125, 0.0625, 1.0, 0.0078125, 0.5, 0.25],
]
# Secondary rows of one scenario: (only_a, only_b) per row.
TARONE = [
    ([(6, 0)], 0.05),
    ([(6, 0), (0, 0), (0, 0), (0, 0), (1, 0), (0, 1), (0, 0), (0, 0), (0, 0), (0, 0)], 0.05),
    ([(7, 0), (6, 0), (3, 1), (0, 9), (2, 2)], 0.05),
    ([(10, 0), (10, 1), (8, 0), (7, 0), (6, 0), (5, 0)], 0.05),
    ([(0, 0), (0, 0)], 0.05),
    ([(12, 2), (9, 0), (4, 0), (20, 5)], 0.01),
    ([(8, 0), (8, 0), (8, 0), (8, 0), (8, 0), (8, 0), (8, 0), (8, 0), (8, 0)], 0.05),
    ([(5, 0), (5, 0), (6, 0)], 0.1),
]
DETECTABLE_REPS = [1, 3, 5, 6, 7, 8, 10, 12, 20, 30, 50]
DETECTABLE_ALPHAS = [0.05, 0.01, 0.1]
DETECTABLE_ROWS = [1, 2, 3, 5, 10]


def wilson(x, n, confidence):
    low, high = proportion_confint(x, n, alpha=1 - confidence, method="wilson")
    return [max(0.0, float(low)), min(1.0, float(high))]


def newcombe(both, only_a, only_b, neither, confidence):
    n = both + only_a + only_b + neither
    p1, p2 = (both + only_b) / n, (both + only_a) / n
    l1, u1 = wilson(both + only_b, n, confidence)
    l2, u2 = wilson(both + only_a, n, confidence)
    r, s, t, u = both, only_b, only_a, neither
    denominator = (r + s) * (t + u) * (r + t) * (s + u)
    cross = r * u - s * t
    corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0)
    phi = corrected / math.sqrt(denominator) if denominator > 0 else 0.0
    d = p1 - p2
    low = d - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = d + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return [max(-1.0, low), min(1.0, high)]


def min_p(d):
    return 1.0 if d == 0 else float(binomtest(0, d, 0.5).pvalue)


def tarone_case(rows, alpha):
    mins = [min_p(a + b) for a, b in rows]
    m = len(rows)
    k = next(k for k in range(1, max(m, 1) + 1) if sum(p <= alpha / k for p in mins) <= k)
    counted = [p <= alpha / k for p in mins]
    raw = [1.0 if a + b == 0 else float(binomtest(b, a + b, 0.5).pvalue) for a, b in rows]
    family = [p for p, c in zip(raw, counted) if c]
    adj = list(multipletests(family, method="holm")[1]) if family else []
    it = iter(adj)
    adjusted = [float(next(it)) if c else None for c in counted]
    return {"rows": [list(r) for r in rows], "alpha": alpha, "min_p": mins, "k": k,
            "counted": counted, "p": raw, "adjusted": adjusted}


def detectable(n, alpha, rows):
    d = next(d for d in range(1, 200) if min_p(d) < alpha / rows)
    return {"reps": n, "alpha": alpha, "rows": rows, "min_discordant": d,
            "difference": d / n if d <= n else None}


def main():
    cases = []
    for both, only_a, only_b, neither in TABLES:
        n = both + only_a + only_b + neither
        discordant = only_a + only_b
        p = 1.0 if discordant == 0 else binomtest(only_b, discordant, 0.5).pvalue
        for confidence in CONFIDENCES:
            cases.append({
                "both": both, "only_a": only_a, "only_b": only_b, "neither": neither,
                "confidence": confidence,
                "p_exact": float(p),
                "wilson_a": wilson(both + only_a, n, confidence),
                "wilson_b": wilson(both + only_b, n, confidence),
                "newcombe": newcombe(both, only_a, only_b, neither, confidence),
            })
    holm = [{"p": ps, "adjusted": [float(x) for x in multipletests(ps, method="holm")[1]]} for ps in HOLM]
    out = {
        "generator": "scripts/eval-stats-reference.py",
        "precision": PRECISION,
        "cases": cases,
        "holm": holm,
        "tarone": [tarone_case(r, a) for r, a in TARONE],
        "detectable": [detectable(n, a, j) for n in DETECTABLE_REPS for a in DETECTABLE_ALPHAS
                       for j in DETECTABLE_ROWS],
    }
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/data/eval_stats_reference.json"
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
