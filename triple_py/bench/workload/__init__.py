"""What is sent: the BenchmarkService messages (:mod:`.messages`), any service's schema
from ``.proto`` files (:mod:`.schema`) or server reflection (:mod:`.reflection`,
:mod:`.descriptor_repair`), request data and its templates (:mod:`.request_data`,
:mod:`.template`), call metadata (:mod:`.metadata`), and one call's whole setup
(:mod:`.call_setup`). The floor above the base modules: it knows nothing of runs."""
