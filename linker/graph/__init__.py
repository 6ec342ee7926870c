"""Facts read off Aesara graphs that every layer uses.

- `scan_layout`: where each kind of input and output sits in a `Scan` node's
  argument lists.
- `value_bounds`: `ValuesWithin`, an integer tensor with the bounds of its
  values beside it.

A leaf: imports nothing of aejax.
"""
