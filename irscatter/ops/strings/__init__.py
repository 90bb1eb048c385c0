"""Packing and unpacking string tensors: StringTensorPack builds one from byte ranges of a u8
buffer, StringTensorUnpack takes one apart into those ranges and the buffer. irscatter's string
tensors hold text (numpy's StringDType), so the bytes of every string must be valid UTF-8.
"""
