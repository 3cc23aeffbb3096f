"""Which clock domain each part of an elaborated design runs in (for the boards' tests)."""

from collections.abc import Iterator

__all__ = ["fragment_domains"]


def fragment_domains(fragment, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """``(path, domain)`` of every statement and memory write port in ``fragment``'s hierarchy
    (an :class:`amaranth.hdl.Fragment`), ``path`` the submodules' names joined by ``/``: what
    a test needs to say that a block runs in the clock it was placed in."""
    for domain in fragment.statements:
        yield "/".join(path), domain
    for port in getattr(fragment, "_write_ports", ()):
        yield "/".join(path), port._domain
    for sub, name, *_ in fragment.subfragments:
        yield from fragment_domains(sub, (*path, str(name)))
