"""wsc.device.run_artifacts: several artifacts in one `wsc run` process, and a
fresh process after one that ends it (a fault or hang), so that only that
artifact fails."""

import json
import subprocess
import sys

import wsc.device as device
from wsc.runtime.run_cli import STARTING


def fake_runs(monkeypatch, outcomes):
    """Each `wsc run` process prints the reports of `outcomes` for the
    directories it gets, until an outcome "dies" (silently) or "faults"
    (reports, then exits)."""
    commands = []

    def run(command, capture_output, text, timeout):
        commands.append(command)
        lines, started = [], []
        for directory in [arg for arg in command[3:] if not arg.startswith("--")]:
            outcome = outcomes[directory]
            if outcome == "dies after the last":
                break
            started.append(f"{STARTING}{directory}")
            if outcome == "dies":
                break
            if outcome == "hangs":
                raise subprocess.TimeoutExpired(
                    command, timeout, "\n".join(lines).encode(), "\n".join(started).encode()
                )
            if outcome == "faults":
                lines.append(json.dumps({"ok": False, "error": "KernelFault: illegal address"}))
                break
            lines.append(json.dumps({"ok": outcome == "ok", "dir": directory}))
        return subprocess.CompletedProcess(
            command, 1, "\n".join(lines), "\n".join(started + ["Segmentation fault"])
        )

    monkeypatch.setattr(device.subprocess, "run", run)
    return commands


def test_one_process_runs_every_artifact(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok", "b": "wrong", "c": "ok"})
    reports = device.run_artifacts(["a", "b", "c"], sizes={"m": 64})
    assert [r["ok"] for r in reports] == [True, False, True]
    assert len(commands) == 1
    assert commands[0][:3] == [sys.executable, "-m", "wsc.runtime.run_cli"]
    assert "--size=m=64" in commands[0]
    assert "--device=0" in commands[0]


def test_a_process_that_dies_before_it_reports_blames_the_last_artifact_it_started(monkeypatch):
    """`wsc run` prints its reports at the end: those started before the one
    that broke the process run again in a fresh one."""
    commands = []

    def run(command, capture_output, text, timeout):
        commands.append(command)
        directories = [arg for arg in command[3:] if not arg.startswith("--")]
        if len(commands) == 1:
            started = "\n".join(f"{STARTING}{directory}" for directory in directories[:3])
            return subprocess.CompletedProcess(command, -11, "", started + "\nSegmentation fault")
        lines = [json.dumps({"ok": True, "dir": directory}) for directory in directories]
        return subprocess.CompletedProcess(command, 0, "\n".join(lines), "")

    monkeypatch.setattr(device.subprocess, "run", run)
    reports = device.run_artifacts(["a", "b", "c", "d"])
    assert [r.get("dir") for r in reports] == ["a", "b", None, "d"]
    assert not reports[2]["ok"] and "Segmentation fault" in reports[2]["error"]
    assert [arg for arg in commands[1][3:] if not arg.startswith("--")] == ["a", "b", "d"]


def test_artifacts_are_timed_as_asked(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok"})
    device.run_artifacts(["a"])
    device.run_artifacts(["a"], timing="back-to-back")
    device.run_artifacts(["a"], bench=False, timing="back-to-back")
    assert "--timing=flushed" in commands[0] and "--bench" in commands[0]
    assert "--timing=back-to-back" in commands[1]
    assert not any(arg.startswith(("--timing", "--bench")) for arg in commands[2])


def test_artifacts_run_on_the_device_asked_for(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok"})
    assert device.run_artifacts(["a"], device=1)[0]["ok"]
    assert "--device=1" in commands[0]


def test_an_artifact_that_ends_the_process_fails_alone(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok", "b": "dies", "c": "faults", "d": "ok"})
    reports = device.run_artifacts(["a", "b", "c", "d"])
    assert [r["ok"] for r in reports] == [True, False, False, True]
    assert reports[1]["error"].endswith("Segmentation fault")
    assert "illegal address" in reports[2]["error"]
    assert [c[3] for c in commands] == ["a", "c", "d"]


def test_a_hang_fails_alone_and_the_timeout_covers_every_artifact(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok", "b": "hangs", "c": "ok"})
    reports = device.run_artifacts(["a", "b", "c"], timeout_s=10)
    assert [r["ok"] for r in reports] == [True, False, True]
    assert reports[1]["error"] == "no report within 10 s"
    assert [c[3] for c in commands] == ["a", "c"]


def test_a_process_that_dies_between_artifacts_blames_none(monkeypatch):
    outcomes = {"a": "ok", "b": "dies after the last", "c": "ok"}
    commands = fake_runs(monkeypatch, outcomes)
    run = device.subprocess.run

    def then_recovers(command, **kwargs):
        result = run(command, **kwargs)
        outcomes["b"] = "ok"  # what ended the first process was not b
        return result

    monkeypatch.setattr(device.subprocess, "run", then_recovers)
    reports = device.run_artifacts(["a", "b", "c"])
    assert [r["ok"] for r in reports] == [True, True, True]
    assert [c[3] for c in commands] == ["a", "b"]


def test_a_process_that_starts_nothing_fails_the_next_artifact(monkeypatch):
    # E.g. an interpreter that cannot import wsc: no artifact started, no report.
    commands = fake_runs(monkeypatch, {"a": "dies after the last", "b": "dies after the last"})
    reports = device.run_artifacts(["a", "b"])
    assert [r["ok"] for r in reports] == [False, False] and len(commands) == 2
