"""The statistics the tables and Findings use, pure functions of numbers and of the study's
design: rank tests, multiple-comparison corrections and power (`inference`), bootstrap
resampling (`bootstrap`), and associations with the design held fixed (`design`)."""
