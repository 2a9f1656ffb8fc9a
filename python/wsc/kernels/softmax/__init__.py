"""The row softmax, Y = softmax(X) along each row, warp-specialized by its
author (roles, ring and barriers written with wsc.builder):

    schedule  the row lengths it takes, the view it computes on and the
              schedule per row length (no MLIR)
    build     the kernel (MLIR, through wsc.builder)

`wsc.softmax` calls it; examples/softmax.py builds, checks and times it alone.
"""
