"""Service registries: where a channel finds its backends by service name.

``zookeeper://host:port/<interface>`` reads the providers Dubbo services register in
ZooKeeper (triple_py.registry.zookeeper); the URL format is in dubbo_url, the filters and the
target syntax in provider_query.
"""
