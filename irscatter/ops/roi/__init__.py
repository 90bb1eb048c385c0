"""Region-of-interest pooling: ROIPooling, ROIAlign, rotated ROIAlign, position-sensitive pooling.
"""
