"""wsc.device.run_artifacts: several artifacts in one `wsc run` process, and a
fresh process after one that ends it (a fault or hang), so that only that
artifact fails."""

import json
import subprocess
import sys

import wsc.device as device


def fake_runs(monkeypatch, outcomes):
    """Each `wsc run` process prints the reports of `outcomes` for the
    directories it gets, until an outcome "dies" (silently) or "faults"
    (reports, then exits)."""
    commands = []

    def run(command, capture_output, text, timeout):
        commands.append(command)
        lines = []
        for directory in [arg for arg in command[3:] if not arg.startswith("--")]:
            outcome = outcomes[directory]
            if outcome == "dies":
                break
            if outcome == "faults":
                lines.append(json.dumps({"ok": False, "error": "KernelFault: illegal address"}))
                break
            lines.append(json.dumps({"ok": outcome == "ok", "dir": directory}))
        return subprocess.CompletedProcess(command, 1, "\n".join(lines), "Segmentation fault")

    monkeypatch.setattr(device.subprocess, "run", run)
    return commands


def test_one_process_runs_every_artifact(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok", "b": "wrong", "c": "ok"})
    reports = device.run_artifacts(["a", "b", "c"], sizes={"m": 64})
    assert [r["ok"] for r in reports] == [True, False, True]
    assert len(commands) == 1
    assert commands[0][:3] == [sys.executable, "-m", "wsc.runtime.run_cli"]
    assert "--size=m=64" in commands[0]


def test_an_artifact_that_ends_the_process_fails_alone(monkeypatch):
    commands = fake_runs(monkeypatch, {"a": "ok", "b": "dies", "c": "faults", "d": "ok"})
    reports = device.run_artifacts(["a", "b", "c", "d"])
    assert [r["ok"] for r in reports] == [True, False, False, True]
    assert reports[1]["error"] == "Segmentation fault"
    assert "illegal address" in reports[2]["error"]
    assert [c[3] for c in commands] == ["a", "c", "d"]
