"""The store seam: `base.py` declares what memory needs; each backend is a package beside it."""
