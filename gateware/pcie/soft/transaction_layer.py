"""The soft endpoint's transaction layer on its data link layer: one wiring for every top."""

from amaranth.lib import wiring

__all__ = ["connect_transaction_layer"]


def connect_transaction_layer(m, link, config, router) -> None:
    """Connect :class:`~.config_space.ConfigSpace` and :class:`~.tlp_router.TlpRouter` to
    :class:`~.data_link.SoftDataLink` as every endpoint top needs them: both on the received
    TLP units with the link's keep-or-drop verdict; the non-posted header credits held until an
    answer has left and the posted credits until the application has taken the request
    (``np_held``/``np_released``, ``p_held``/``p_released``: see
    :class:`~.update_fc.UpdateFc`); the link's timers by the negotiated Max_Payload_Size; the
    router decoding BAR0 and the completer ID from configuration space. The answers' transmit
    side (a :class:`~.tlp_merge.TlpMerge` of ``config.tlp``, ``router.ur_tlp`` and whatever
    else the top sends) and the router's ``source`` are the top's.

    The unit is the link's: bytes on the one-symbol link, DWs (``RX_TLP_DW``) on the
    four-symbol one; ``config`` and ``router`` must be built with the same ``unit=``. A router
    of another unit is refused here (its ``rx_tlp`` is assigned, not connected, so a DW would
    otherwise be cut to its byte 0 without a word)."""
    unit = link.rx_tlp.signature.members["payload"].shape
    if router.rx_tlp.signature.members["payload"].shape != unit:
        raise TypeError(f"the router takes TLPs as "
                        f"{router.rx_tlp.signature.members['payload'].shape}, the link gives "
                        f"them as {unit}: build it with unit= the link's")
    wiring.connect(m, link.rx_tlp, config.rx_tlp)
    m.d.comb += [
        router.rx_tlp.valid.eq(link.rx_tlp.valid),
        router.rx_tlp.payload.eq(link.rx_tlp.payload),
        config.rx_accept.eq(link.rx_accept),
        router.rx_accept.eq(link.rx_accept),
        config.link_status.eq(link.status),
        link.np_held.eq(config.np_held | router.np_held),
        link.np_released.eq(config.np_released + router.np_released),
        link.p_held.eq(router.p_held),
        link.p_released.eq(router.p_released),
        link.max_payload_size.eq(config.max_payload_size),
        router.memory_space.eq(config.memory_space),
        router.bar0_base.eq(config.bar0_base),
        router.completer_id.eq(config.completer_id),
    ]
