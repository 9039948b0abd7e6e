"""raystudy: distributed studies of disentangled representations and their OOD transfer."""

__version__ = "0.1.0"
