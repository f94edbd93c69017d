"""The networks (STN, LPRNet, the plate detector, the global recognizer): module definitions, pinned
weights, ONNX artifacts.

STN and LPRNet are defined here and exported from their checkpoints; the plate detector
(`y5fu_640x_sim.onnx`, HyperLPR) is downloaded as ONNX and only rewritten to take any batch size
(detector_graph.py); the global recognizer (`cct_xs_v1_global.onnx`, fast-plate-ocr) is only
renamed (global_ocr.py). Importing this package is cheap: torch and onnx are imported only by the
modules that define, export or rewrite the networks, so serving code never needs them.
"""
