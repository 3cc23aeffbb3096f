"""The EP0 data stages that never change, laid out in the telemetry's snapshot RAM.

GET_INFO, GET_DESCRIPTOR, GET_STATUS, GET_INTERFACE and GET_CONFIGURATION answer with constant
bytes (GET_STATUS and GET_CONFIGURATION with one of two). They sit in the snapshot
RAM right after the telemetry block, one block per answer starting on a word, so
:class:`~.request_handler.ProbeRequestHandler` streams every data stage it sends (telemetry
included) through one read port and one registered word. LUNA's own descriptor handler keeps
its descriptors in a ROM of LUTs whose lookup, behind the transmitter's ``ready``, was the
design's ECP5 critical path; a block RAM word that is read ahead takes no LUTs and is off that
path.
"""

from __future__ import annotations

from busprobe.protocol import usb2
from usb_protocol.emitters import DeviceDescriptorCollection

from ..common.words import Reply, little_endian_words
from .descriptors import build_descriptors

__all__ = ["ControlReplies", "Reply"]


class ControlReplies:
    """The constant answers of EP0 and the snapshot RAM words that hold them.

    Attributes
    ----------
    info: Reply
        GET_INFO (:func:`busprobe.protocol.usb2.pack_info` of the bitstream's features).
    zero: Reply
        Two zero bytes: GET_STATUS (a device, an interface, an endpoint not halted); its first
        alone, GET_INTERFACE (alternate setting 0) and GET_CONFIGURATION of an unconfigured
        device.
    one: Reply
        The bytes 1, 0: GET_STATUS of a halted endpoint; its first alone, GET_CONFIGURATION of
        the configured device.
    descriptors: dict[tuple[int, int], Reply]
        GET_DESCRIPTOR, by (descriptor type, index); ``wIndex`` (the string language) is
        ignored, as LUNA's handler ignores it.
    words: list[int]
        The RAM's initial words from :data:`first_word` on.
    first_word: int
        Where they start (right after the telemetry block).
    depth: int
        Words the snapshot RAM needs: the telemetry block and these.
    longest: int
        Bytes of the longest answer.

    Parameters
    ----------
    features: usb2.Feature
        What the bitstream has (GET_INFO says so).
    descriptors: DeviceDescriptorCollection
        The device's descriptors (default :func:`~.descriptors.build_descriptors`).
    """

    first_word = usb2.TELEMETRY_WORDS

    def __init__(self, *, features: usb2.Feature = usb2.NO_FEATURES,
                 descriptors: DeviceDescriptorCollection | None = None):
        if descriptors is None:
            descriptors = build_descriptors()
        self.words: list[int] = []
        self.info = self._add(usb2.pack_info(usb2.Feature(features)))
        self.zero = self._add(b"\0\0")
        self.one = self._add(b"\1\0")
        self.descriptors = {}
        for kind, index, raw in sorted(descriptors, key=lambda d: (d[0], d[1])):
            if not isinstance(raw, bytes):
                raise ValueError(f"descriptor {kind}/{index} is made at run time; "
                                 f"only constant descriptors fit the RAM")
            self.descriptors[kind, index] = self._add(raw)
        self.depth = self.first_word + len(self.words)
        self.longest = max(reply.length for reply in
                           (self.info, self.zero, self.one, *self.descriptors.values()))

    def _add(self, raw: bytes) -> Reply:
        reply = Reply(self.first_word + len(self.words), len(raw))
        self.words += little_endian_words(raw)
        return reply
