"""The recognition networks (STN, LPRNet): module definitions, pinned weights, ONNX export.

Importing this package is cheap: torch is imported only by the modules that define or export
the networks, so serving code never needs it.
"""
