"""The operation family: `checks` (`operation.completes`).
"""
