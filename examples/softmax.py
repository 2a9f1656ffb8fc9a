"""Row softmax, warp-specialized: a producer warp streams rows through a ring, a consumer warpgroup reduces them.

Y[R, C] = softmax(X[R, C]) along each row. The kernel, with its pseudo-code,
is wsc.kernels.softmax.build (python/wsc/kernels/softmax/build.py), where
wsc.softmax finds it; this example builds it for rows of 1024, checks it on
999 rows and times it on --size rows, as every example does with its kernel.
"""

import sys

from common import run_example

from wsc.kernels.softmax.build import softmax
from wsc.kernels.softmax.schedule import softmax_view

if __name__ == "__main__":
    sys.exit(
        run_example(
            __doc__,
            softmax,
            ragged=softmax_view(999, 1024),
            bench_sizes=lambda size: softmax_view(size, 1024),
        )
    )
