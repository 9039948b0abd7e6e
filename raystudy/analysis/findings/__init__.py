"""The papers' questions a study can answer, read from the tables: one module per paper
(`dittadi`, `montero2021`, `montero2022`, `schott`, `locatello`), what they share (`shared`,
`montero`), one Finding as a row (`rows`), the families adjusted as one table (`table`), the
papers' claims answered from the rows (`claims`), and a Finding said as a sentence (`text`)."""
