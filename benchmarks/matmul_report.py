"""The reports of benchmarks/matmul.py: the Markdown table, the CSV and the
plot of the final comparison."""

from __future__ import annotations

import csv
import math
from pathlib import Path


def method_result(row: dict, method: str) -> dict | None:
    return next((r for r in row["results"] if r["method"] == method), None)


def row_line(row: dict) -> str:
    parts = [row["shape"]]
    for r in row["results"]:
        parts.append(
            f"{r['method']} {r.get('ms') or float('nan'):.3f} ms "
            f"{r.get('tflops') or float('nan'):.0f} TF ok={r['ok']} "
            f"err={r.get('rel_err') or float('nan'):.1e}"
        )
    return " | ".join(parts)


def ratios(row: dict) -> tuple[float | None, float | None]:
    wsc, cublas, tri = (method_result(row, m) for m in ("wsc", "cublas", "triton"))

    def ratio(base):
        if wsc and wsc.get("ms") and base and base.get("ms"):
            return base["ms"] / wsc["ms"]
        return None

    return ratio(cublas), ratio(tri)


def format_table(rows: list[dict]) -> str:
    """Markdown: ms and TFLOPS of each method, wsc's ratio to cuBLAS and to Triton."""

    def cell(r, key, fmt):
        return format(r[key], fmt) if r and r.get(key) is not None else "n/a"

    lines = [
        "| shape | dtype | cuBLAS ms | TFLOPS | Triton ms | TFLOPS | wsc ms | TFLOPS "
        "| wsc/cuBLAS | wsc/Triton | wsc config |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cublas_ratios = []
    for row in rows:
        cub, tri, wsc = (method_result(row, m) for m in ("cublas", "triton", "wsc"))
        vs_cublas, vs_triton = ratios(row)
        if vs_cublas:
            cublas_ratios.append(vs_cublas)
        lines.append(
            f"| {row['shape']} | {row['dtype']} | {cell(cub, 'ms', '.3f')} | {cell(cub, 'tflops', '.0f')} "
            f"| {cell(tri, 'ms', '.3f')} | {cell(tri, 'tflops', '.0f')} | {cell(wsc, 'ms', '.3f')} "
            f"| {cell(wsc, 'tflops', '.0f')} | {f'{vs_cublas:.2f}' if vs_cublas else 'n/a'} "
            f"| {f'{vs_triton:.2f}' if vs_triton else 'n/a'} "
            f"| {wsc.get('candidate', 'n/a') if wsc else 'n/a'} |"
        )
    if cublas_ratios:
        geomean = math.exp(sum(map(math.log, cublas_ratios)) / len(cublas_ratios))
        lines.append(f"\nwsc/cuBLAS geometric mean over {len(cublas_ratios)} shapes: {geomean:.3f}")
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "shape",
                "m",
                "n",
                "k",
                "dtype",
                "method",
                "config",
                "ms",
                "tflops",
                "rel_err",
                "ok",
                "wsc_over_cublas",
                "wsc_over_triton",
            ]
        )
        for row in rows:
            vs_cublas, vs_triton = ratios(row)
            for r in row["results"]:
                writer.writerow(
                    [
                        row["shape"],
                        row["m"],
                        row["n"],
                        row["k"],
                        row["dtype"],
                        r["method"],
                        r.get("candidate") or r.get("config") or "",
                        r.get("ms"),
                        r.get("tflops"),
                        r.get("rel_err"),
                        r["ok"],
                        vs_cublas if r["method"] == "wsc" else "",
                        vs_triton if r["method"] == "wsc" else "",
                    ]
                )


def plot(rows: list[dict], path: Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"cublas": "cuBLAS (torch.matmul)", "triton": "Triton", "wsc": "wsc (autotuned)"}
    # Only methods with a timing on some shape get bars (Triton may be absent).
    methods = [
        m for m in labels if any((method_result(row, m) or {}).get("tflops") for row in rows)
    ]
    width = 0.8 / len(methods)
    figure, axes = plt.subplots(figsize=(14, 5.5))
    for i, method in enumerate(methods):
        values = [(method_result(row, method) or {}).get("tflops") or 0.0 for row in rows]
        positions = [x + (i - (len(methods) - 1) / 2) * width for x in range(len(rows))]
        axes.bar(positions, values, width, label=labels[method])
    axes.set_xticks(range(len(rows)))
    axes.set_xticklabels([row["shape"] for row in rows], rotation=30, ha="right", fontsize=8)
    axes.set_ylabel("TFLOP/s (median of CUDA events)")
    axes.set_ylim(0, axes.get_ylim()[1] * 1.15)  # room for the legend
    missing = [labels[m] for m in labels if m not in methods]
    axes.set_title(
        f"C = A B^T, fp32 accumulation, {env['gpu']}, {env['date_utc']}"
        + (f" ({', '.join(missing)}: not measured)" if missing else "")
    )
    axes.legend(loc="upper left", ncol=len(methods))
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
