"""The PTX wsc generates for a fixed set of kernels, as SHA-256 digests: proof
that a refactoring changed no generated code.

    python test/ptx/digests.py record    # write test/ptx/digests.json
    python test/ptx/digests.py check     # compile again; exit 1 and name each kernel that differs

The set: examples V1-V9 with their default configs, and every config of
wsc.matmul's config spaces (the benchmark's winners among them), f16 inputs
and the output dtype each space is tuned for (the block-scaled spaces fp8
inputs with block scales and bf16 C), and every config of the TMA-store space
with fp8 inputs and per-tensor scales. A space's kernels are named by their
config, so a config added to a space or moved in it leaves the others' names
as they were. A change that is meant to alter code generation records the
digests again in the same commit. Both commands fail where two configs of a
space build the same PTX: the tuner would time one kernel twice.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DIGESTS = HERE / "digests.json"
EXAMPLES = {
    "v1": ("v1_tma_wgmma", "matmul_v1"),
    "v2": ("v2_ring_buffer", "matmul_v2"),
    "v3": ("v3_warp_specialized", "matmul_v3"),
    "v3-auto": ("v3_auto", "matmul_v3_auto"),
    "v4": ("v4_two_consumers", "matmul_v4"),
    "v5": ("v5_one_group_in_flight", "matmul_v5"),
    "v6": ("v6_256x256", "matmul_v6"),
    "v7": ("v7_split_k", "matmul_split_k"),
    "v8": ("v8_fused_epilogue", "matmul_fused_epilogue"),
    "v9": ("v9_fp8_scaled", "matmul_fp8_scaled"),
}


def kernels():
    """(name, a function that builds the kernel) for every kernel of the set."""
    sys.path.insert(0, str(REPO / "examples"))
    for name, (module, function) in EXAMPLES.items():
        build = getattr(importlib.import_module(module), function)
        yield f"example-{name}", build
    from wsc.kernels.matmul.space import SPACES
    from wsc.target.hopper import E4M3

    for space in SPACES:
        # The staged epilogues ("nk-tma", "kn-coalesced", ...) store a 16-bit C.
        fixed = {"dtype": "f16", "out_dtype": "f16" if "-" in space else "f32"}
        if "block-scaled" in space:
            fixed = {"dtype": E4M3, "out_dtype": "bf16", "block_scales": True}
        for config in SPACES[space].configs():

            def build(config=config, space=space, fixed=fixed):
                return SPACES[space](b_layout=space.split("-")[0], **fixed, **config)

            yield f"matmul-{space} {config_name(config)}", build
    for config in SPACES["nk-tma"].configs():

        def build_fp8(config=config):
            return SPACES["nk-tma"](dtype=E4M3, out_dtype="bf16", b_layout="nk", **config)

        yield f"matmul-fp8-nk-tma {config_name(config)}", build_fp8


def config_name(config: dict) -> str:
    """A config as a kernel's name in the digests: its fields in name order."""
    return ",".join(f"{field}={config[field]}" for field in sorted(config))


def digests() -> dict[str, str]:
    result = {}
    for name, build in kernels():
        ptx = build().compile().ptx
        result[name] = hashlib.sha256(ptx.encode()).hexdigest()
        print(f"{name}: {result[name][:16]}", flush=True)
    return result


def same_ptx(current: dict[str, str]) -> list[list[str]]:
    """The kernels of one space (the part of the name before the config) that
    share a digest, each group sorted."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, digest in current.items():
        groups.setdefault((name.split(" ")[0], digest), []).append(name)
    return sorted(sorted(names) for names in groups.values() if len(names) > 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", choices=("record", "check"))
    args = parser.parse_args(argv)
    current = digests()
    duplicates = same_ptx(current)
    for names in duplicates:
        print(f"same PTX: {' and '.join(names)}", file=sys.stderr)
    if args.command == "record":
        if duplicates:
            print("not recorded: drop the duplicate configs from their space", file=sys.stderr)
            return 1
        DIGESTS.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
        return 0
    recorded = json.loads(DIGESTS.read_text())
    changes = {
        "PTX differs": sorted(
            n for n in recorded.keys() & current.keys() if recorded[n] != current[n]
        ),
        "new, not recorded": sorted(current.keys() - recorded.keys()),
        "recorded, no longer built": sorted(recorded.keys() - current.keys()),
    }
    for what, names in changes.items():
        for name in names:
            print(f"{what}: {name}", file=sys.stderr)
    unchanged = len(current) - len(changes["PTX differs"]) - len(changes["new, not recorded"])
    print(f"{unchanged} of {len(current)} kernels byte-identical to the record")
    return 1 if duplicates or any(changes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
