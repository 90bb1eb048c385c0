"""The ExperimentalDetectron ops of Mask R-CNN exports: priors, proposals, feature extraction,
top-k ROIs and the detection output.
"""
