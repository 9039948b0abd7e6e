"""The analysis's tables, each a pure function of the finished trials: rank correlations
(`correlations`), model selection (`selection`), the metrics' agreement (`agreement`),
R^2 per split (`r2`), the composition task (`composition`) and the decoder test
(`decoder_test`)."""
