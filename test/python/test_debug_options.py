"""Hangs become errors: the lowering's debug options (wait spin limit, random
delays in one role) and the runtime's KernelFault, tested without a GPU.

On a GPU, test/gpu/hang.py checks that the planted hang traps in time with
its report, and test/gpu/stress.py that delays do not change results.
"""

from pathlib import Path

import pytest

from wsc.codegen import find_ptxas, lower_to_ptx
from wsc.codegen.debug import REPORT_PREFIX, DebugOptions, reports_in_ptx
from wsc.codegen.ptxas import assemble
from wsc.diagnostics import PassError
from wsc.kernels.matmul.build import compile_matmul
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.tools.opt import main as wsc_opt

REPO = Path(__file__).resolve().parents[2]
V3 = (REPO / "examples" / "matmul_v3.mlir").read_text()
PLANTED_HANG = (REPO / "test" / "gpu" / "planted-hang.mlir").read_text()
needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(wait_spin_limit=-1), "wait-spin-limit must be in [0, 2^31), got -1"),
        (dict(delay_max_ns=0), "delay-max-ns must be in [1, 1000000] (nanosleep's range), got 0"),
    ],
)
def test_debug_options_are_checked(options, message):
    with pytest.raises(
        ValueError,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("[", r"\[")
        .replace("]", r"\]")
        .replace("^", r"\^"),
    ):
        DebugOptions(**options)


def test_delay_role_matches_names_and_numbered_names():
    options = DebugOptions(delay_role="consumer")
    assert options.delays("consumer") and options.delays("consumer1")
    assert not options.delays("producer") and not options.delays(None)
    assert not DebugOptions().delays("consumer")


def test_delay_role_must_name_a_role():
    with pytest.raises(
        PassError,
        match=r"has no role 'loader' to delay \(delay-role=loader; "
        r"roles: consumer, producer\)",
    ):
        lower_to_ptx(V3, debug=DebugOptions(delay_role="loader"))


def test_bad_option_value_is_a_usage_error(capsys, tmp_path):
    source = tmp_path / "v3.mlir"
    source.write_text(V3)
    assert wsc_opt(["--convert-wsc-to-nvvm=delay-max-ns=2000000", str(source)]) == 1
    assert (
        "pass 'convert-wsc-to-nvvm': delay-max-ns must be in [1, 1000000]"
        in capsys.readouterr().err
    )


def test_spin_limit_reports_each_wait_site():
    ptx, _ = lower_to_ptx(PLANTED_HANG, debug=DebugOptions(wait_spin_limit=4096))
    # One report per wait: the consumer's, the producer's and its drain's.
    reports = sorted(reports_in_ptx(ptx))
    assert len(reports) == 3
    assert all(
        r.startswith(f"{REPORT_PREFIX}: kernel matmul: thread %d of block (%d, %d, %d), role ")
        and r.endswith("; trapping\n")
        for r in reports
    )
    assert ["barrier full" in r for r in reports] == [True, False, False]
    assert (
        "role producer gave up after 4096 tries waiting on barrier empty, stage %d, "
        "phase parity %d (wait at line 67, column 7)" in reports[1]
    )
    assert ptx.count("trap;") >= 3 and "call.uni" in ptx and "vprintf" in ptx


def test_no_instrumentation_by_default():
    ptx, _ = lower_to_ptx(V3)
    assert "vprintf" not in ptx and "trap;" not in ptx and "nanosleep" not in ptx


@pytest.mark.parametrize("role, sites", [("producer", 3), ("consumer", 2)])
def test_delays_go_before_the_roles_barrier_ops(role, sites, tmp_path, capsys):
    source = tmp_path / "v3.mlir"
    source.write_text(V3)
    assert wsc_opt([f"--convert-wsc-to-nvvm=delay-role={role}", str(source)]) == 0
    lowered = capsys.readouterr().out
    # producer: its wait, its expect_tx arrive, its drain wait;
    # consumer: its wait on full and its arrive on empty.
    assert lowered.count('"nanosleep.u32 $0;"') == sites


@needs_ptxas
@pytest.mark.parametrize(
    "debug",
    [
        DebugOptions(),
        DebugOptions(wait_spin_limit=1 << 20),
        DebugOptions(delay_role="producer"),
        DebugOptions(delay_role="consumer", wait_spin_limit=1 << 16),
    ],
    ids=["plain", "spin-limit", "delay-producer", "delay-consumer-and-spin-limit"],
)
def test_instrumented_kernels_assemble_with_their_register_budgets(debug):
    # assemble() raises on C7508, i.e. if the vprintf calls made ptxas drop setmaxnreg.
    ptx, _ = lower_to_ptx(V3, debug=debug)
    report = assemble(ptx)
    assert report.spill_stores == 0
    assert ("trap;" in ptx) == bool(debug.wait_spin_limit)
    assert ("nanosleep" in ptx) == bool(debug.delay_role)


def test_matmul_config_carries_the_debug_options(tmp_path):
    config = MatmulConfig(debug_spin_limit=1000, debug_delay_role="producer")
    result = compile_matmul(256, 256, 256, MatmulProblem(), config, tmp_path / "debug")
    ptx = (tmp_path / "debug" / "kernel.ptx").read_text()
    assert result.ptx == ptx
    assert "nanosleep" in ptx
    assert {"consumer", "producer"} == {r.split("role ")[1].split()[0] for r in reports_in_ptx(ptx)}
    assert all("gave up after 1000 tries" in r for r in reports_in_ptx(ptx))


def test_kernel_fault_is_an_exception(monkeypatch):
    """A kernel that trapped leaves an error on its stream: synchronize raises."""
    from wsc.runtime import KernelFault, driver

    failed = driver.cu.CUresult.CUDA_ERROR_LAUNCH_FAILED
    monkeypatch.setattr(driver.cu, "cuStreamQuery", lambda stream: (failed,))
    monkeypatch.setattr(
        driver, "error_text", lambda result: "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"
    )
    with pytest.raises(KernelFault, match="unspecified launch failure.*a trap") as error:
        driver.synchronize(timeout_s=1)
    assert isinstance(error.value, driver.CudaError)
