"""The gather family, the inverses of the scatters.
"""
