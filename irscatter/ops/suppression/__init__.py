"""Non-maximum suppression: greedy, soft, rotated, matrix and multi-class NMS.
"""
