"""irscatter's own opset `irscatter1`: the scatter systems of other frameworks (StableHLO,
Apple BNNS, Paddle, PyPTO's paged KV cache), as ops of a custom domain and as plain functions.
"""
