"""A ULPI bus made of plain signals, shaped like the resource ``platform.request`` returns."""

from types import SimpleNamespace

from amaranth import Signal

__all__ = ["ulpi_bus"]


def ulpi_bus(*, data_i=None, data_o=None, data_oe=None, dir_i=None, nxt_i=None, stp_o=None,
             rst_o=None):
    """A ULPI bus with resource-style ``.i``/``.o``/``.oe`` subfields (docs/DESIGN.md §8).

    LUNA's ``UTMITranslator`` reads ``data.i``, ``dir.i``, ``nxt.i`` and drives ``data.o``,
    ``data.oe``, ``stp.o`` and ``rst.o``; LUNA's own ``ULPIInterface`` record lacks these
    subfields. Signals not given are created. The bus has no ``clk``: the caller provides the
    ``usb`` clock domain.
    """
    return SimpleNamespace(
        data=SimpleNamespace(i=data_i if data_i is not None else Signal(8, name="ulpi_data_i"),
                             o=data_o if data_o is not None else Signal(8, name="ulpi_data_o"),
                             oe=data_oe if data_oe is not None else Signal(name="ulpi_data_oe")),
        dir=SimpleNamespace(i=dir_i if dir_i is not None else Signal(name="ulpi_dir")),
        nxt=SimpleNamespace(i=nxt_i if nxt_i is not None else Signal(name="ulpi_nxt")),
        stp=SimpleNamespace(o=stp_o if stp_o is not None else Signal(name="ulpi_stp")),
        rst=SimpleNamespace(o=rst_o if rst_o is not None else Signal(name="ulpi_rst")),
    )
