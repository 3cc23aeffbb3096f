"""``busprobe fit``: a USB 2.0 host profile estimated from a sweep (docs/DESIGN.md §6.4).

One module per step: :mod:`.observations` reads and checks the result, :mod:`.predict` gives the
model's figures for a measured repeat, :mod:`.objective` weighs them against the measurements,
:mod:`.estimate` searches the parameters (:mod:`.search`, :mod:`.parameters`),
:mod:`.uncertainty` says how sure, :mod:`.suggest` which points would make it surer,
:mod:`.fitted` puts it together (:func:`~.fitted.fit_sweep`), :mod:`.profile_toml` writes the
profile and :mod:`.report` what the command prints.
"""
