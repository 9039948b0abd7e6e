"""Where datasets come from: drawn from their factors by a renderer (:mod:`.procedural`) or
read from the published files (:mod:`.files`). Each dataset module registers its datasets
when its package is imported."""
