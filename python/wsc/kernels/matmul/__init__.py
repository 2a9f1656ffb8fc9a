"""The matmul kernel, C = A @ op(B), in one package:

    config   MatmulProblem and MatmulConfig, with the checks that need no IR
    build    the kernel as wsc IR, compile_matmul and its artifact (MLIR)
    space    the config spaces wsc.matmul tunes over and their defaults
    check    the problem an artifact computes, its inputs and float64 reference

config and check import no MLIR (pyproject's import-linter contract), so the
GPU side runs and checks matmul artifacts without the bindings.
"""
