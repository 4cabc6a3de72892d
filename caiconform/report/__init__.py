"""Reports of finished runs: read run directories, fold their records into the matrix, render it.

What a result means (outcomes, filing, the catalogue, severity, expectations, the verdict) lives
in `caiconform.results`; this package reads runs (`load`, `merge`, `runstate`), builds the matrix
and its coverage tables (`matrix`, `coverage`, `build`) and says them for people: Markdown, the
HTML page, bug-report texts, the upstream pack, standalone reproducers and their verification.
"""
