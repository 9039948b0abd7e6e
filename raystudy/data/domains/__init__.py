"""Domains and shifts: how an image of a scene looks beyond its factors. A procedural
dataset's ``real`` (:mod:`.real`: camera effects) and ``photo`` (:mod:`.photo`: photographed
backgrounds, textures and light) domains, both on what a camera adds (:mod:`.camera`, ending in
the JPEG codec of :mod:`.jpeg`); and the per-image nuisances of Locatello et al.'s datasets
(:mod:`.nuisance`: the draws; :mod:`.sprite_appearances`: what the dSprites variants draw over
the sprite)."""
