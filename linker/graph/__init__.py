"""Facts read off Aesara graphs that every layer uses.

- `scan_layout`: where each kind of input and output sits in a `Scan` node's
  argument lists.

A leaf: imports nothing of aejax.
"""
