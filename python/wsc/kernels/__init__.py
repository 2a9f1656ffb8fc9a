"""Kernels built with the wsc builder API, in the non-specialized form that
--warp-specialize takes as input."""
