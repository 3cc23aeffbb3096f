"""Host-controller profiles: TOML data, installed as package data.

Read by :mod:`busprobe.model.usb2_hosts`; one file per profile, every number with its source.
"""
