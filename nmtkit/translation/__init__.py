"""Translation: the streaming Translator (lines -> chunks -> batches -> search -> input order ->
detokenized text) and the output formats of ``nmtkit translate``."""
