"""The splits of the papers raystudy reproduces: Dittadi et al. 2021 (:mod:`.dittadi`),
Montero et al. 2021 (:mod:`.montero2021`) and 2022 (:mod:`.montero2022`,
:mod:`.montero2022_variants`), Schott et al. 2022 (:mod:`.schott`).

Importing the package registers every split of its modules (the registry is
:mod:`raystudy.data.splits.registry`).
"""

from raystudy.data.splits.papers import dittadi as _dittadi  # noqa: F401
from raystudy.data.splits.papers import montero2021 as _montero2021  # noqa: F401
from raystudy.data.splits.papers import montero2022 as _montero2022  # noqa: F401
from raystudy.data.splits.papers import schott as _schott  # noqa: F401
