"""The long fuzz run: many random mutants through both pipelines, every
finding collected (not only the first, as the hypothesis test in CI does).

    python test/fuzz/run.py --mutants 20000 --seed 1 [--record test/fuzz/RESULTS.md]

Each finding is grouped by signature (what broke and the message's shape)
and printed with the smallest mutant seen for it and its seed chunk, so it
can be turned into a regression test. `--record` appends a dated summary to
the results file.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzzlib import (  # noqa: E402
    PIPELINES,
    Runner,
    load_corpus,
    make_mutant,
    problems,
    random_mutations,
    signature,
    token_pools,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=2000, help="mutants per pipeline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", type=Path, help="append a summary to this Markdown file")
    parser.add_argument("--show", type=int, default=1, help="mutants shown per finding")
    args = parser.parse_args()

    corpus = load_corpus()
    pools = token_pools(corpus)
    rng = random.Random(args.seed)
    runner = Runner()
    findings: dict[str, list] = collections.defaultdict(list)
    outcomes = collections.Counter()
    slowest = (0.0, "")
    start = time.monotonic()
    try:
        for number in range(args.mutants):
            name, text = rng.choice(corpus)
            mutations = random_mutations(rng)
            data = make_mutant(text, mutations, pools)
            for pipeline, argv in PIPELINES.items():
                result = runner.run(argv, data)
                outcomes[
                    (pipeline, "ok" if result.rc == 0 else "error" if result.rc == 1 else "crash")
                ] += 1
                if result.seconds > slowest[0]:
                    slowest = (result.seconds, f"{pipeline} on a mutant of {name}")
                if problems(result):
                    key = f"{pipeline}: {signature(result)}"
                    if key not in findings:
                        print(
                            f"new finding at mutant {number + 1}: {key}",
                            file=sys.stderr,
                            flush=True,
                        )
                    findings[key].append((len(data), name, data, result))
            if (number + 1) % 500 == 0:
                print(
                    f"{number + 1} mutants, {len(findings)} finding(s), "
                    f"{time.monotonic() - start:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        runner.close()
    elapsed = time.monotonic() - start

    print(
        f"{args.mutants} mutants x {len(PIPELINES)} pipelines in {elapsed:.0f} s "
        f"(seed {args.seed}); outcomes: "
        + ", ".join(f"{p} {o} {n}" for (p, o), n in sorted(outcomes.items()))
    )
    print(f"slowest: {slowest[0]:.2f} s ({slowest[1]})")
    for key, cases in sorted(findings.items()):
        cases.sort(key=lambda case: case[0])
        print(f"\n== {len(cases)} x {key}")
        for size, name, data, result in cases[: args.show]:
            print(f"-- smallest mutant ({size} bytes, from {name}):")
            print(data.decode("utf-8", errors="replace"))
            print("-- stderr:")
            print(result.stderr[-2000:])
    if args.record:
        _record(args, elapsed, outcomes, findings, slowest)
    return 1 if findings else 0


def _record(args, elapsed, outcomes, findings, slowest) -> None:
    lines = [
        f"\n## {datetime.date.today().isoformat()}: {args.mutants} mutants x "
        f"{len(PIPELINES)} pipelines, seed {args.seed}\n",
        f"- wall time {elapsed:.0f} s; slowest mutant {slowest[0]:.2f} s ({slowest[1]})",
        "- outcomes: " + ", ".join(f"{p} {o} {n}" for (p, o), n in sorted(outcomes.items())),
    ]
    if findings:
        lines.append(f"- findings ({len(findings)}):")
        lines += [f"  - {len(cases)} x `{key}`" for key, cases in sorted(findings.items())]
    else:
        lines.append("- findings: none")
    with args.record.open("a") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
