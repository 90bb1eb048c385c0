"""Embedding bags and segment reductions over sparse index lists, and filling empty rows.

core.py holds the bag arithmetic (gather, weight, sum or mean into bags, fill empty bags) that
the EmbeddingBag* and EmbeddingSegmentsSum ops share.
"""
