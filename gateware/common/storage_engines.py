"""The null disk's two command engines on one set of bulk pipes and one telemetry: BOT on
alternate 0, UAS on alternate 1, the setting in force choosing (both speeds' data paths)."""

from amaranth import Mux

from .storage_telemetry import ENGINE_EVENTS

__all__ = ["share_data_in", "share_telemetry"]


def share_data_in(m, to_in, bot, uas, uas_on):
    """The data-in pipe's packet stream ``to_in`` from the UAS engine while ``uas_on``, else from
    the BOT engine (the other one waits: SET_INTERFACE resets both)."""
    m.d.comb += [
        to_in.valid.eq(Mux(uas_on, uas.in_packets.valid, bot.in_packets.valid)),
        to_in.payload.eq(Mux(uas_on, uas.in_packets.payload, bot.in_packets.payload)),
        bot.in_packets.ready.eq(to_in.ready & ~uas_on),
        uas.in_packets.ready.eq(to_in.ready & uas_on),
    ]


def share_telemetry(m, telemetry, bot, uas, uas_on, *, domain=None):
    """The storage telemetry fed by the engine in force (its events, its snapshot and reads of
    the replies RAM); the BOT engine's phase errors and the UAS task set's counts always.

    With ``domain`` the counted events (not the snapshot's handshake or the replies' reads)
    reach the telemetry through a register of that domain, a cycle later: on the ECPIX-5 the
    task set's count and the engines' block counts through the alternate's multiplexer into the
    telemetry's histogram were ``ss`` timing paths (issue 44 item 7). An event a cycle later
    is counted the same; the snapshot is taken rounds after the command that asks for it.
    """
    events = m.d.comb if domain is None else m.d[domain]
    m.d.comb += [
        telemetry.capture.eq(Mux(uas_on, uas.capture, bot.capture)),
        bot.snapshot_ready.eq(telemetry.ready),
        uas.snapshot_ready.eq(telemetry.ready),
        telemetry.read_address.eq(Mux(uas_on, uas.read_address, bot.read_address)),
        bot.read_data.eq(telemetry.read_data),
        uas.read_data.eq(telemetry.read_data),
    ]
    events += [
        telemetry.phase_error.eq(bot.phase_error),
        # UAS commands outstanding: those in the task set, queued or executing.
        telemetry.tags.eq(uas.outstanding),
        telemetry.task_set_full.eq(uas.task_set_full),
        telemetry.overlapped.eq(uas.overlapped),
        telemetry.aborted.eq(uas.aborted),
        telemetry.bad_tag.eq(uas.bad_tag),
    ]
    for name in ENGINE_EVENTS:
        events += getattr(telemetry, name).eq(Mux(uas_on, getattr(uas, name),
                                                  getattr(bot, name)))
