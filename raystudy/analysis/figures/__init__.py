"""The papers' figures, drawn from the results table and the tables: of the models
(`models`), of transfer (`transfer`), of the decoder test (`decoder_test`), with the helpers
of `plotting`; `study` lists them for the report."""
