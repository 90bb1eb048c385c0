"""Matrix products.
"""
