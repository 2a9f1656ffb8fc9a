"""wsc: a warp-specialization compiler for NVIDIA Hopper (sm_90a) built on MLIR.

The compiler side (dialect, passes, driver) needs the MLIR Python bindings; the
runtime (`wsc.runtime`) does not, so compiled kernels run where only the CUDA
driver is. This module therefore imports nothing from `mlir`.
"""

__version__ = "0.1.0"
