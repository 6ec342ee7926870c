"""The conformance run: other projects' test suites with every Aesara function compiled on AEJAX.

A plain folder of test tooling, not part of the installed package; see README.md.
"""
