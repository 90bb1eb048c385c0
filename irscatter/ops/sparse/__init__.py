"""Embedding bags and segment reductions over sparse index lists, and filling empty rows.
"""
