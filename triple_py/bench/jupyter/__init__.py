"""Notebooks: running one with parameters (:mod:`.notebook`) and the Jupyter server of
``triple-bench notebook`` (:mod:`.notebook_server`)."""
