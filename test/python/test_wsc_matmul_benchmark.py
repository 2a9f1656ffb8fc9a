"""The product benchmark's pure parts (benchmarks/wsc_matmul.py): its shape
sets, the operands it passes, what `prepare` compiles for them, and the
report's ratios and HBM bandwidth. No GPU: operands are meta tensors and the
report reads made-up records."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

from wsc.matmul import shape_class

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_wsc_matmul", REPO / "benchmarks" / "wsc_matmul.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def meta_operands(bench, shape):
    storage = functools.partial(torch.empty, dtype=getattr(torch, shape["dtype"]), device="meta")
    return bench.operands(shape, storage)


def test_named_shapes_are_m_n_k_triples(bench, capsys):
    assert bench.problems("4096x4096x4096,128x4096x4096") == "4096x4096x4096,128x4096x4096"
    for bad in ("4096x4096", "0x128x128", "ax1x1", "4096x4096x4096,", "2\u00b2x1x1"):
        with pytest.raises(SystemExit) as exit_:
            bench.main(["prepare", "--shapes", bad])
        assert exit_.value.code == 2
        assert "is not MxNxK (three positive ints)" in capsys.readouterr().err


def test_the_default_set_is_the_llm_set(bench):
    llm = bench.shapes(bench.LAYOUTS)
    assert len(llm) == 52 and {s["set"] for s in llm} == {"llm"}
    assert sum(s["dtype"] == "bfloat16" for s in llm) == 2
    assert len(bench.shapes(bench.LAYOUTS, quick=True)) == 9


def test_the_odd_set_is_a_multiple_of_no_tile_in_any_size(bench):
    odd = bench.shapes(bench.LAYOUTS, shape_set="odd")
    assert {s["set"] for s in odd} == {"odd"}
    assert {s["layout"] for s in odd} == {"nk", "kn"}
    assert {s["dtype"] for s in odd} == {"float16", "bfloat16"}
    for s in odd:
        assert all(s[size] % 64 for size in "mnk"), s
        assert s["k"] % 8 == 0, s  # A's rows as TMA reads them
    assert any(s["m"] <= bench.HBM_BOUND_M for s in odd)
    assert any(s["n"] % 8 for s in odd)


def test_each_odd_shape_is_tuned_on_itself(bench):
    """No odd shape takes the config that another shape's class tuned, of
    either set (the sets may run in one process, one cache)."""

    def tuned_class(s):
        ((space, dtype),) = bench.planned_spaces([s])
        return tuple(shape_class(s["m"], s["n"], s["k"])), space, dtype

    llm = {tuned_class(s) for s in bench.shapes(bench.LAYOUTS)}
    odd = [tuned_class(s) for s in bench.shapes(bench.LAYOUTS, shape_set="odd")]
    assert len(set(odd)) == len(odd) and not llm & set(odd)


def test_named_shapes(bench):
    named = bench.shapes(["kn"], only="33x5000x7000,100x64x64")
    assert [(s["m"], s["n"], s["k"], s["set"]) for s in named] == [
        (33, 5000, 7000, "named"),
        (100, 64, 64, "named"),
    ]


def test_dtypes_give_every_size_in_each(bench):
    both = bench.shapes(["nk"], dtypes=["float16", "bfloat16"])
    sizes = {(s["m"], s["n"], s["k"]) for s in bench.shapes(["nk"])}
    assert len(both) == 2 * len(sizes)
    assert {(s["m"], s["n"], s["k"], s["dtype"]) for s in both} == {
        (*size, dtype) for size in sizes for dtype in ("float16", "bfloat16")
    }


def test_rows_are_padded_only_where_tma_cannot_read_them(bench):
    shape = dict(m=1000, n=1333, k=520, dtype="float16")
    a, b, c, _, _ = meta_operands(bench, {**shape, "layout": "nk"})
    assert (a.stride(), b.stride(), c.stride()) == ((520, 1), (1, 520), (1333, 1))
    a, b, c, _, _ = meta_operands(bench, {**shape, "layout": "kn"})
    assert b.shape == (520, 1333) and b.stride() == (1336, 1)
    assert c.is_contiguous() and a.is_contiguous()
    a, b, *_ = meta_operands(bench, dict(m=16, n=4096, k=4100, layout="nk", dtype="bfloat16"))
    assert a.stride() == (4104, 1) and b.stride() == (1, 4104) and b.dtype == torch.bfloat16


def test_prepare_compiles_the_spaces_the_set_is_tuned_over(bench):
    llm = bench.planned_spaces(bench.shapes(bench.LAYOUTS))
    staged = {(f"{layout}-tma", dtype) for layout in ("nk", "kn") for dtype in ("f16", "bf16")}
    small_m = {(f"{layout}-small-m", "f16") for layout in ("nk", "kn")}
    assert set(llm) == staged | small_m
    odd = bench.planned_spaces(bench.shapes(bench.LAYOUTS, shape_set="odd"))
    assert set(odd) == staged | small_m | {("nk-coalesced", "f16"), ("kn-coalesced", "f16")}


def test_extra_configs_are_read_from_a_json_list(bench, tmp_path, monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(bench, "tune_tables", lambda selected, extra: seen.append(extra) or 0)
    configs = [{"block_m": 72, "block_n": 128, "swap_ab": True, "cluster_n": 3}]
    good = tmp_path / "extra.json"
    good.write_text(json.dumps(configs))
    assert bench.main(["tune", "--shapes", "200x5000x7000", "--extra", str(good)]) == 0
    assert seen == [configs]
    for text, message in (("{", "Expecting"), ('{"block_m": 72}', "a JSON list of config")):
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(SystemExit):
            bench.main(["prepare", "--extra", str(tmp_path / "bad.json")])
        assert message in capsys.readouterr().err


def test_triton_runs_where_its_descriptors_can_read_and_store_every_row(bench):
    assert bench.triton_runs(dict(m=33, n=5000, k=7000, layout="kn", dtype="float16"))
    assert not bench.triton_runs(dict(m=1000, n=1333, k=520, layout="nk", dtype="float16"))
    assert not bench.triton_runs(dict(m=16, n=4096, k=4100, layout="nk", dtype="float16"))


def _record(m, n, k, wsc_us, cublas_us, **extra):
    def times(us):
        summary = {"median": us, "min": us, "max": us}
        return {"wall_us": summary, "kernel_us": summary, "kernel_tflops": 2 * m * n * k / us / 1e6}

    return {
        "m": m,
        "n": n,
        "k": k,
        "layout": "nk",
        "dtype": "float16",
        "first_call_s": 5.0,
        "results": {"wsc": times(wsc_us), "cublas": times(cublas_us)},
        **extra,
    }


def test_hbm_bandwidth_is_the_bytes_moved_over_the_kernel_time(bench):
    record = _record(16, 4096, 4096, wsc_us=20.0, cublas_us=10.0)
    moved = (16 * 4096 + 4096 * 4096 + 16 * 4096) * 2
    assert bench.bytes_moved(record) == moved
    assert bench.hbm_bandwidth(record, "wsc") == pytest.approx(moved / 20e-6)
    assert bench.hbm_bandwidth(record, "cublas") == pytest.approx(moved / 10e-6)


def test_hbm_peak_is_the_measured_gpu_s(bench):
    assert bench.hbm_peak({"gpu": "NVIDIA H100 80GB HBM3"}) == ("H100 80GB HBM3", 3.35e12)
    assert bench.hbm_peak({"gpu": "NVIDIA H200"}) == ("H200", 4.8e12)
    assert bench.hbm_peak({}) == ("H200", 4.8e12)  # records from before they named it
    with pytest.raises(ValueError, match="no HBM peak known"):
        bench.hbm_peak({"gpu": "NVIDIA A100-SXM4-80GB"})


def test_the_report_gives_each_set_its_own_mean_and_lowest(bench, tmp_path, capsys):
    records = [
        _record(16, 4096, 4096, wsc_us=20.0, cublas_us=10.0),  # before sets were recorded
        _record(8192, 8192, 8192, wsc_us=100.0, cublas_us=200.0, set="llm"),
        _record(33, 5000, 7000, wsc_us=40.0, cublas_us=36.0, set="odd"),
        _record(3000, 5000, 7000, wsc_us=80.0, cublas_us=100.0, set="odd"),
        _record(1000, 1333, 520, wsc_us=10.0, cublas_us=30.0, set="odd"),
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert bench.report(path) == 0
    out = capsys.readouterr().out
    llm, odd = out.split("### The LLM shape set")[1].split("### Sizes that are not multiples")
    assert "geometric mean over 2 shapes: user path (wall) 1.000, lowest 0.500 (16x4096x4096" in llm
    assert "N a multiple of 8" not in llm
    mean = (0.9 * 1.25 * 3.0) ** (1 / 3)
    assert f"geometric mean over 3 shapes: user path (wall) {mean:.3f}, lowest 0.900 (33x" in odd
    # cuBLAS's slow kernels for C's rows off 16 bytes apart, from the others.
    aligned = f"user path (wall) {math.sqrt(0.9 * 1.25):.3f}, lowest 0.900 (33x5000x7000"
    assert f"N a multiple of 8, geometric mean over 2 shapes: {aligned}" in odd
    assert "N not a multiple of 8, geometric mean over 1 shapes: user path (wall) 3.000" in odd
    hbm = odd.split("HBM bandwidth at M <= 64")[1]
    rows = [line for line in hbm.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| 16", "4096", "4096"],
        ["| 33", "5000", "7000"],
    ]
    moved = (16 * 4096 + 4096 * 4096 + 16 * 4096) * 2
    assert f"| {moved / 1e6:.1f} | 20.0 | {moved / 20e-6 / 1e9:.0f} | " in rows[0]


def test_block_scales_are_checked_and_reported_with_either_layout_of_scale_a(
    bench, tmp_path, capsys
):
    shape = {"m": 4096, "n": 4096, "k": 4096, "block_scales": True}
    assert bench._checks_epilogue(shape, "wsc") and bench._checks_epilogue(shape, "wsc_row_major")
    assert not bench._checks_epilogue(shape, "wsc_tensor")
    record = _record(4096, 4096, 4096, wsc_us=100.0, cublas_us=80.0, set="fp8-block")
    record.update(dtype="float8_e4m3fn", block_scales=True)
    record["results"]["wsc_tensor"] = _record(4096, 4096, 4096, 90.0, 90.0)["results"]["wsc"]
    record["results"]["wsc_row_major"] = _record(4096, 4096, 4096, 104.5, 1.0)["results"]["wsc"]
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert bench.report(path) == 0
    assert "| 100.0 (104.5 with scale_a row-major) / 80.0 / 90.0 |" in capsys.readouterr().out


def test_an_epilogue_is_named_as_wsc_matmul_takes_it(bench):
    assert bench.parse_epilogue("bias,gelu,residual") == {
        "bias": True,
        "activation": "gelu",
        "residual": True,
    }
    assert bench.parse_epilogue("") == {}
    for bad in ("bias,tanh", "relu,silu"):
        with pytest.raises(ValueError, match="bias, residual and one of relu, gelu"):
            bench.parse_epilogue(bad)


def test_epilogue_shapes_carry_their_tensors_and_plan_fused_spaces(bench):
    epilogue = {"bias": True, "activation": "silu", "residual": True}
    fused = bench.shapes(["nk"], epilogue=epilogue, min_m=2048)
    assert len(fused) == 11 and all(s["m"] >= 2048 and s["epilogue"] == epilogue for s in fused)
    shape = dict(m=2048, n=4096, k=1024, layout="nk", dtype="float16", epilogue=epilogue)
    a, b, c, bias, residual = meta_operands(bench, shape)
    assert bias.shape == (4096,) and residual.shape == (2048, 4096)
    assert bench.bytes_moved(shape) == (2048 * 1024 + 1024 * 4096 + 2 * 2048 * 4096 + 4096) * 2
    ((space, dtype), p), *_ = bench.planned_spaces([shape]).items()
    assert (space, p.bias, p.activation, p.residual) == ("nk-tma", True, "silu", True)
    plain = dict(shape, epilogue=None)
    assert meta_operands(bench, plain)[3:] == (None, None)


def test_the_report_measures_a_fused_epilogue_against_torch_compile(bench, tmp_path, capsys):
    fused = _record(4096, 4096, 4096, wsc_us=220.0, cublas_us=200.0, set="llm")
    fused["epilogue"] = {"bias": True, "activation": "gelu", "residual": True}
    for name, us in (("compiled", 242.0), ("eager", 300.0)):
        fused["results"][name] = {
            "wall_us": {"median": us},
            "kernel_us": {"median": us},
            "kernel_tflops": 2 * 4096**3 / us / 1e6,
        }
    plain = _record(8192, 8192, 8192, wsc_us=100.0, cublas_us=200.0, set="llm")
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (fused, plain)))
    assert bench.report(path) == 0
    out = capsys.readouterr().out
    epilogues, sets = out.split("### The LLM shape set")
    assert (
        "| bias,gelu,residual | 220.0 / 242.0 / 300.0 / 200.0 | 1.100 | 1.100 | 1.364 |"
        in epilogues
    )
    assert "kernel alone 1.100, lowest 1.100 (4096x4096x4096 nk float16 +bias,gelu,residual)" in (
        epilogues
    )
    assert "geometric mean over 1 shapes: user path (wall) 2.000" in sets


def test_conditions_take_graph_lengths_in_milliseconds(monkeypatch):
    """benchmarks/matmul_conditions.py's --graph-ms: positive numbers, or a
    usage error before anything runs."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "bench_matmul_conditions", REPO / "benchmarks" / "matmul_conditions.py"
    )
    conditions = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conditions)
    assert conditions._lengths("4,20,100") == [4.0, 20.0, 100.0]
    for bad in ("", "4,x", "0", "-1,5"):
        with pytest.raises(SystemExit):
            conditions.main(["--graph-ms", bad, "128x4096x4096xnk"])


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 7, 8])
def test_methods_are_timed_in_turn_each_at_every_place_and_after_every_other(bench, count):
    names = [f"m{i}" for i in range(count)]
    cycle = count * (2 if count % 2 else 1)
    order = list(bench.in_turn(names, cycle))
    rounds = [order[i : i + count] for i in range(0, len(order), count)]
    assert all(sorted(r) == names for r in rounds)
    for place in range(count):
        assert Counter(r[place] for r in rounds) == Counter({n: cycle // count for n in names})
    after = Counter((r[i], r[i + 1]) for r in rounds for i in range(count - 1))
    pairs = [(a, b) for a in names for b in names if a != b]
    assert sorted(after) == sorted(pairs)
    assert set(after.values()) <= {cycle // count}
    # More rounds than the design's start it over; fewer take its first ones.
    assert list(bench.in_turn(names, cycle + 1)) == order + order[:count]
    assert list(bench.in_turn(names, 1)) == order[:count]
