"""Running: the rounds of a matrix (:mod:`.rounds`), a single run and its preflight
(:mod:`.runner`), the servers (:mod:`.servers`, :mod:`.server_cpu`), capacity searches
(:mod:`.capacity`), progress on a terminal (:mod:`.progress`) or in a notebook
(:mod:`.live`)."""
