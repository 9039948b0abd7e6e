"""Splits and selectors: which factor combinations a trial's encoder trains on and its probes
fit and are scored on. Sets are selectors (:mod:`.selectors`), compiled for sampling
(:mod:`.compiled_sets`) into a :class:`.split.Split`; built-in splits are named in
:mod:`.registry` (the i.i.d. split, :mod:`.iid`; the papers' splits, :mod:`.papers`) or read
from index files (:mod:`.index_files`). What a trial draws from a split besides single
combinations: held-out sets (:mod:`.heldout`), composition triples (:mod:`.composition`) and
whether weakly supervised pairs can be drawn (:mod:`.pairs`)."""
