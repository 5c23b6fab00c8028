"""The library behind the ``grade`` command: grades attention exercises against a reference.

Importing this package is cheap: torch is imported only by the modules that compute with it.
"""

__version__ = "0.1.0"
