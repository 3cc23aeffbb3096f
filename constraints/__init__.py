"""Pin and timing constraints that do not come from a board package, one TOML file per board.

This folder is installed as the package ``busprobe.gateware.constraints`` (see ``setup.py``), so
:func:`busprobe.gateware.boards.constraints.load_constraints` finds the files in a checkout, in an
editable install and in an installed wheel alike. It holds data only.
"""
