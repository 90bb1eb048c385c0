"""The graph's boundary: Parameter-1, Constant-1 and Result-1. The interpreter fills Parameter
and Const outputs before a run and reads Result inputs after it, so these ops take part in
inference only.
"""
