"""Detection heads: prior boxes, proposals, SSD's detection output, YOLO's region and reorg layers.
"""
