"""Element-wise ops: each output element depends only on the elements at the same position of
the (broadcast) inputs.
"""
