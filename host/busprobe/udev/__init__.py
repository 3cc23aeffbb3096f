"""udev rules shipped with busprobe (installed as package data; see ``busprobe list``)."""
