#!/usr/bin/env python3
"""Prints a pairwise covering set of combinations: every pair of values of any two
dimensions that occurs in some candidate appears in at least one line. Greedy (AETG-like),
deterministic.

    pairwise.py runtime=none,singularity scheduler=slurm,pbs ...
        candidates: the full product; prints "runtime=none scheduler=slurm ..." lines
    pairwise.py --candidates FILE runtime=... scheduler=...
        candidates: FILE's lines, each "VALUE VALUE ..." in the order of the dimensions
"""
import itertools
import sys


def main(argv):
    candidates_file = None
    if argv[:1] == ["--candidates"]:
        candidates_file, argv = argv[1], argv[2:]
    dims = []
    for arg in argv:
        name, _, values = arg.partition("=")
        dims.append((name, values.split(",")))
    if candidates_file:
        with open(candidates_file) as f:
            candidates = [tuple(line.split()) for line in f if line.strip()]
    else:
        candidates = list(itertools.product(*[values for _, values in dims]))
    index_pairs = list(itertools.combinations(range(len(dims)), 2))
    uncovered = {(i, c[i], j, c[j]) for c in candidates for i, j in index_pairs}
    chosen = []
    while uncovered:
        def gain(combo):
            return sum((i, combo[i], j, combo[j]) in uncovered for i, j in index_pairs)
        best = max(candidates, key=gain)  # the first of the best: deterministic
        chosen.append(best)
        for i, j in index_pairs:
            uncovered.discard((i, best[i], j, best[j]))
    for combo in chosen:
        print(" ".join(f"{name}={value}" for (name, _), value in zip(dims, combo)))


if __name__ == "__main__":
    main(sys.argv[1:])
