"""Element-type conversion ops.
"""
