"""Control flow: If, Loop and TensorIterator, whose bodies run through the same interpreter.
"""
