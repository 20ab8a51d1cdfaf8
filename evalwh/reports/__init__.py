"""Reports: plain-text, Markdown, JUnit, HTML and Parquet/CSV/JSON renderings of the
warehouse's named queries. Nothing here computes a number of its own."""
