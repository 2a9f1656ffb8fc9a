"""The values --warp-specialize's options can take, without MLIR: kernel
configs (wsc.kernels.matmul.config) check against them before any IR is
built, on machines that may lack the bindings."""

from wsc.target.hopper import WARP_SIZE, WARPGROUP_SIZE

#: The consumer warpgroups, producer roles and WGMMA groups in flight the pass
#: can build, and who may release a stage.
CONSUMER_GROUPS = (1, 2, 4)
PRODUCERS = ("warp", "warpgroup")
#: The threads of each producer role.
PRODUCER_THREADS = {"warp": WARP_SIZE, "warpgroup": WARPGROUP_SIZE}
WGMMA_IN_FLIGHT = (0, 1)
RELEASES = ("thread", "warp")
