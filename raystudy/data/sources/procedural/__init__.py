"""Datasets drawn from their factors in torch, on the device of the indices: dSprites and its
variants, 3dshapes, MPI3D, the finger, Circles and Simple, on a :class:`.dataset.ProceduralDataset`
with the ``real`` and ``photo`` domains; the drawing tools they share are :mod:`.sdf`
(2-D shapes), :mod:`.solids` (shaded 3-D solids) and :mod:`.colour`.

Importing the package registers every dataset of its modules (the registry is
:mod:`raystudy.data.core.registry`).
"""

from raystudy.data.sources.procedural import circles as _circles  # noqa: F401
from raystudy.data.sources.procedural import dsprites as _dsprites  # noqa: F401
from raystudy.data.sources.procedural import dsprites_variants as _dsprites_variants  # noqa: F401
from raystudy.data.sources.procedural import finger as _finger  # noqa: F401
from raystudy.data.sources.procedural import mpi3d as _mpi3d  # noqa: F401
from raystudy.data.sources.procedural import shapes3d as _shapes3d  # noqa: F401
