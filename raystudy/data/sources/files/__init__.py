"""Datasets read from their published files (dSprites and its variants, 3dshapes, MPI3D,
SmallNORB, Cars3D), each a :class:`.dataset.FileDataset` whose ``render`` is a row lookup:
:mod:`.arrays` reads ``.npz`` and ``.h5`` members lazily, :mod:`.resized_cache` keeps the
published images resized once to 64x64.

Importing the package registers every dataset of its modules (the registry is
:mod:`raystudy.data.core.registry`).
"""

from raystudy.data.sources.files import cars3d_file as _cars3d_file  # noqa: F401
from raystudy.data.sources.files import dsprites_file as _dsprites_file  # noqa: F401
from raystudy.data.sources.files import dsprites_variants_file as _dsprites_variants_file  # noqa: F401
from raystudy.data.sources.files import mpi3d_file as _mpi3d_file  # noqa: F401
from raystudy.data.sources.files import shapes3d_file as _shapes3d_file  # noqa: F401
from raystudy.data.sources.files import smallnorb_file as _smallnorb_file  # noqa: F401
