"""The values --warp-specialize's options can take, without MLIR: kernel
configs (wsc.kernels.matmul.config) check against them before any IR is
built, on machines that may lack the bindings."""

#: The consumer warpgroups, producer roles and WGMMA groups in flight the pass
#: can build, and who may release a stage.
CONSUMER_GROUPS = (1, 2, 4)
PRODUCERS = ("warp", "warpgroup")
WGMMA_IN_FLIGHT = (0, 1)
RELEASES = ("thread", "warp")
