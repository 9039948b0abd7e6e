"""The papers' headline claims, as data (`claims.yaml`), and how a study's Findings answer them."""
