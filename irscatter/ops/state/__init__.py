"""Model state: ReadValue and Assign, the variables a compiled model keeps across calls.
"""
